#pragma once
// Mixed precision in the runtime (--precision bf16, fp16): a layer's forward runs under
// torch's autocast for the rank's device type, as torch.autocast does in Python, so matrix
// products compute in the 16-bit type while parameters (the master weights), gradients and
// the optimizer stay in the run's dtype. What crosses ranks is in the run's dtype too
// (step_interpreter.cpp casts 16-bit activations up before sending them; the cast is exact).
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "burst/cost/precision.h"

namespace burst::runtime::detail {

class AutocastScope {
 public:
  AutocastScope(cost::Precision precision, c10::DeviceType device)
      : device_(device), active_(precision == cost::Precision::Bf16 || precision == cost::Precision::Fp16) {
    if (!active_) return;
    was_enabled_ = at::autocast::is_autocast_enabled(device);
    was_dtype_ = at::autocast::get_autocast_dtype(device);
    at::autocast::set_autocast_enabled(device, true);
    at::autocast::set_autocast_dtype(device, precision == cost::Precision::Bf16 ? at::kBFloat16 : at::kHalf);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!active_) return;
    // The weights' casts are cached while autocast is nested; drop them as torch.autocast's
    // exit does, so the next step casts the updated weights.
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(device_, was_enabled_);
    at::autocast::set_autocast_dtype(device_, was_dtype_);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_;
  bool active_;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kBFloat16;
};

}  // namespace burst::runtime::detail
