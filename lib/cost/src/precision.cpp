#include "burst/cost/precision.h"

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::cost {

const char* precision_name(Precision precision) { return kPrecisionNames.name(precision); }

Precision parse_precision(const std::string& name) { return kPrecisionNames.parse(name); }

double value_bytes(Precision precision) { return keeps_master_weights(precision) ? 2.0 : 4.0; }

bool keeps_master_weights(Precision precision) {
  return precision == Precision::Bf16 || precision == Precision::Fp16 || precision == Precision::Fp8;
}

}  // namespace burst::cost
