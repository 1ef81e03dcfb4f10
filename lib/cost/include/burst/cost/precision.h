#pragma once
// The number formats a training step computes in (docs/cost-model.md, "Precision"):
//  - fp32: plain FP32 everywhere;
//  - tf32: fp32 values, matrix products on TF32 tensor cores (A100 and later);
//  - bf16, fp16: mixed precision, as Megatron-LM and DeepSpeed train: 2-byte weights,
//    activations and gradients, an fp32 master copy of the weights and fp32 optimizer state;
//  - fp8: bf16 mixed precision with the matrix products (linear, attention) on FP8 tensor
//    cores (Transformer Engine on H100/H200); memory as bf16.
#include <array>
#include <cstdint>
#include <string>

#include "burst/util/enum_names.h"

namespace burst::cost {

enum class Precision : uint8_t { Fp32, Tf32, Bf16, Fp16, Fp8 };
inline constexpr int kPrecisionCount = 5;
inline constexpr EnumNames<Precision, kPrecisionCount> kPrecisionNames{
    "precision",
    {{{Precision::Fp32, "fp32"}, {Precision::Tf32, "tf32"}, {Precision::Bf16, "bf16"}, {Precision::Fp16, "fp16"},
      {Precision::Fp8, "fp8"}}}};

const char* precision_name(Precision precision);  // "fp32", "tf32", "bf16", "fp16", "fp8"
// UserError naming the known ones for any other word.
Precision parse_precision(const std::string& name);

// Bytes of one activation, weight or gradient value as the step computes and keeps it: 4
// for fp32 and tf32, 2 for the mixed precisions.
double value_bytes(Precision precision);
// Whether the step keeps an fp32 master copy of the weights (the mixed precisions).
bool keeps_master_weights(Precision precision);

// Dense peak FLOP/s per precision (datasheet, no sparsity); 0 where the device has no such
// units (V100: no TF32, bf16 or FP8).
struct PrecisionPeaks {
  std::array<double, kPrecisionCount> flops{};
  double at(Precision precision) const { return flops[static_cast<size_t>(precision)]; }
  double& at(Precision precision) { return flops[static_cast<size_t>(precision)]; }
  bool supports(Precision precision) const { return at(precision) > 0; }
};

}  // namespace burst::cost
