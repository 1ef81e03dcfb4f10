#pragma once
// The analytic device model: a roofline with a batch-dependent efficiency curve per op
// class, fitted to measured profiles so that small-batch under-utilisation is reproduced.
//
//   forward(b)  = max(F·b / (peak · eff(class, b)), bytes(b) / bandwidth) + overhead
//   eff(c, b)   = eff_max(c) · x / (x + x_half(c))
//   backward(b) = backward_ratio(c) · forward(b)
//
// where x, the utilisation variable, is either the per-device batch b or the work of the
// call (F·b FLOPs for compute classes, bytes(b) for the memory class): a device fills up
// with samples for some ops and with total work for others, so the fit picks, per class,
// whichever describes the measurements better.
//
// F is the layer's forward FLOPs per sample (a multiply-add = 2 FLOPs), bytes(b) the
// input and output activations at batch b plus the fp32 weights.
#include <array>
#include <string>
#include <vector>

#include "burst/cost/cost_model.h"
#include "burst/cost/profile.h"

namespace burst::cost {

// Ops grouped by how they use a device: tensor-core/GEMM convolutions, GEMMs (linear,
// attention), and memory-bound element-wise/normalisation/pooling/data-movement ops.
enum class OpClass { Conv, Matmul, Memory };
inline constexpr int kOpClassCount = 3;
OpClass op_class(const std::string& op_name);
const char* op_class_name(OpClass op_class);

struct EfficiencyCurve {
  enum class Scale { Batch, Work };
  double eff_max = 0.5;       // asymptotic fraction of peak, in (0, 1]
  double x_half = 4;          // value of the utilisation variable at half of eff_max
  Scale scale = Scale::Batch;  // utilisation variable: batch, or FLOPs/bytes of the call
  double backward_ratio = 2;  // backward time / forward time
  // `batch` samples doing `work` FLOPs (compute classes) or bytes (memory class).
  double efficiency(int64_t batch, double work) const {
    const double x = scale == Scale::Batch ? static_cast<double>(batch) : work;
    return eff_max * x / (x + x_half);
  }
};
const char* scale_name(EfficiencyCurve::Scale scale);  // "batch" | "work"

struct DeviceSpec {
  std::string kind;         // "a100", "h100-sxm", "cpu"
  std::string description;  // e.g. "NVIDIA A100-SXM4-40GB, TF32 tensor cores"
  double peak_flops = 0;    // FLOP/s the efficiency curves are relative to
  Bandwidth memory_bandwidth;
  Bytes memory;             // device memory capacity
  Seconds overhead;         // per layer call: kernel launches, framework dispatch
  std::array<EfficiencyCurve, kOpClassCount> curves;
};

// The GPUs burst knows (v100, a100, a100-80gb, h100-sxm, h200) with datasheet peak and
// bandwidth; their curves come from fitting (see fit_device). Unknown kinds: UserError.
DeviceSpec catalog_device(const std::string& kind);
std::vector<std::string> catalog_kinds();

// How well a fitted model reproduces the profile it was fitted on (or another one).
struct FitError {
  int entries = 0;
  double median_relative = 0;  // median |predicted - measured| / measured, forward+backward
  double mean_relative = 0;
  std::array<double, kOpClassCount> median_by_class{};
  std::array<int, kOpClassCount> entries_by_class{};
};

// Fits overhead and every op class's curve to `profile`: backward_ratio is the median
// measured backward/forward ratio of the class, then a grid search over overhead, eff_max
// and b_half minimises the squared log error of forward + backward times.
// For the "cpu" kind, peak and bandwidth are first taken from the profile itself (the
// best FLOP/s and bytes/s it achieved), so eff_max <= 1 is meaningful.
DeviceSpec fit_device(DeviceSpec base, const Profile& profile);
// Prediction error of `device`'s analytic model on every entry of `profile`.
FitError evaluate_fit(const DeviceSpec& device, const Profile& profile);

// `target` with the efficiency curves and overhead of `fitted`: how devices we have no
// measurements for (v100, h100-sxm, h200) borrow the shape of the A100 fit, keeping their
// own peak FLOP/s and memory bandwidth.
DeviceSpec with_curves_of(DeviceSpec target, const DeviceSpec& fitted);

class AnalyticCostModel : public CostModel {
 public:
  explicit AnalyticCostModel(DeviceSpec device) : device_(std::move(device)) {}
  std::string device() const override { return device_.kind; }
  std::optional<LayerEstimate> estimate(const graph::Graph& graph, graph::LayerId id,
                                        int64_t batch) const override;
  // The same formula from a layer's work (for fitting and for profile entries).
  LayerTime time(const std::string& op, int64_t flops_per_sample, int64_t bytes_per_sample,
                 int64_t params, int64_t batch) const;
  const DeviceSpec& spec() const { return device_; }

 private:
  DeviceSpec device_;
};

// Measured data first, the analytic model for what the data does not cover.
class LayeredCostModel : public CostModel {
 public:
  LayeredCostModel(std::unique_ptr<CostModel> primary, std::unique_ptr<CostModel> fallback)
      : primary_(std::move(primary)), fallback_(std::move(fallback)) {}
  std::string device() const override { return primary_->device(); }
  std::optional<LayerEstimate> estimate(const graph::Graph& graph, graph::LayerId id,
                                        int64_t batch) const override {
    if (auto measured = primary_->estimate(graph, id, batch)) return measured;
    return fallback_ ? fallback_->estimate(graph, id, batch) : std::nullopt;
  }

 private:
  std::unique_ptr<CostModel> primary_;
  std::unique_ptr<CostModel> fallback_;
};

}  // namespace burst::cost
