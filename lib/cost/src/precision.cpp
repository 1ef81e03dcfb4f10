#include "burst/cost/precision.h"

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::cost {

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::Fp32: return "fp32";
    case Precision::Tf32: return "tf32";
    case Precision::Bf16: return "bf16";
    case Precision::Fp16: return "fp16";
    case Precision::Fp8: return "fp8";
  }
  BURST_ASSERT(false, "unknown precision");
}

Precision parse_precision(const std::string& name) {
  for (const Precision p : {Precision::Fp32, Precision::Tf32, Precision::Bf16, Precision::Fp16, Precision::Fp8}) {
    if (name == precision_name(p)) return p;
  }
  throw UserError(fmt::format("unknown precision '{}' (known: fp32, tf32, bf16, fp16, fp8)", name));
}

double value_bytes(Precision precision) { return keeps_master_weights(precision) ? 2.0 : 4.0; }

bool keeps_master_weights(Precision precision) {
  return precision == Precision::Bf16 || precision == Precision::Fp16 || precision == Precision::Fp8;
}

}  // namespace burst::cost
