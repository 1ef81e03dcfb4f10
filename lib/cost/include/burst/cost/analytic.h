#pragma once
// The analytic device model: a roofline slowed by a fitted efficiency curve per op kind,
// so that the under-utilisation of small per-device batches is reproduced.
//
//   forward(b)  = max(F·b / peak, bytes(b) / bandwidth) / eff(op, x) + overhead
//   eff(op, x)  = eff_max(op) · x / (x + x_half(op))
//   backward(b) = backward_ratio(op) · forward(b)
//
// F is the layer's forward FLOPs per sample (a multiply-add = 2 FLOPs); bytes(b) the input
// and output activations at batch b plus the fp32 weights. x, the utilisation variable, is
// one of three (the fit picks, per op kind, the one that describes the measurements best):
//   - batch: the per-device batch b;
//   - work:  F·b for compute ops (conv2d, linear, self_attention), bytes(b) for the others;
//   - rows:  the M dimension of the op seen as a GEMM, b · output elements / N, with
//            N = params / K and K = F / (2 · output elements), the reduction length (a
//            3x3 conv on a 2x2 map has only 4 rows per sample and runs far below peak).
// Op kinds without measurements use the curve of their class (conv, matmul, memory),
// fitted on every entry of the class.
#include <array>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "burst/cost/cost_model.h"
#include "burst/cost/precision.h"
#include "burst/cost/profile.h"

namespace burst::cost {

// Ops grouped by how they use a device: tensor-core/GEMM convolutions, GEMMs (linear,
// attention), and memory-bound element-wise/normalisation/pooling/data-movement ops.
enum class OpClass { Conv, Matmul, Memory };
inline constexpr int kOpClassCount = 3;
OpClass op_class(const std::string& op_name);
const char* op_class_name(OpClass op_class);

// What one call of a layer does, at its per-device batch.
// Whether `op`'s matrix products run on FP8 units under Precision::Fp8 ("linear", "moe").
bool fp8_gemm(const std::string& op);

struct LayerWork {
  std::string op;     // op name ("conv2d")
  int64_t batch = 0;  // per-device batch
  double flops = 0;   // forward FLOPs of the call
  double bytes = 0;   // activations in and out plus fp32 weights
  double rows = 0;    // GEMM rows (see above)
  double params = 0;  // weight elements among `bytes`' values
};
// From per-sample figures, as graphs and profile entries give them.
LayerWork layer_work(const std::string& op, int64_t batch, int64_t flops_per_sample,
                     int64_t input_bytes_per_sample, int64_t output_bytes_per_sample,
                     int64_t params);

struct EfficiencyCurve {
  enum class Scale { Batch, Work, Rows };
  double eff_max = 0.5;        // asymptotic fraction of the roofline rate, in (0, 1]
  double x_half = 4;           // value of the utilisation variable at half of eff_max
  Scale scale = Scale::Batch;  // the utilisation variable
  double backward_ratio = 2;   // backward time / forward time
  double efficiency(const LayerWork& work) const;
};
const char* scale_name(EfficiencyCurve::Scale scale);  // "batch" | "work" | "rows"

struct DeviceSpec {
  std::string kind;         // "a100", "h100-sxm", "cpu"
  std::string description;  // e.g. "NVIDIA A100-SXM4-40GB, TF32 tensor cores"
  double peak_flops = 0;    // FLOP/s the efficiency curves are relative to: peaks.at(precision)
  Precision precision = Precision::Fp32;  // what the times describe (at_precision)
  PrecisionPeaks peaks;     // dense peak FLOP/s per precision, 0 where unsupported
  Bandwidth memory_bandwidth;
  Bytes memory;             // device memory capacity
  Seconds overhead;         // per layer call: kernel launches, framework dispatch
  std::array<EfficiencyCurve, kOpClassCount> curves;  // per class: the fallback
  std::map<std::string, EfficiencyCurve> op_curves;     // per op kind, where measured
  // The fraction of the bf16/fp16 peak that cuBLAS reaches on large 16-bit GEMMs
  // (docs/cost-model.md, "16-bit GEMMs"): what a matmul-class op's curve tops out at under
  // bf16 and fp16, in place of the eff_max fitted on measurements at the default precision.
  // 0 where no such figure is known: the fitted curve serves every precision.
  double gemm_efficiency_16bit = 0;
  // The fraction of the bf16/fp16 peak a fused attention kernel reaches, forward and backward
  // together (docs/cost-model.md, "Fused attention"): FlashAttention-2's published best. A
  // flash self_attention layer's core runs at it under 16-bit and fp8 steps; 0 where no
  // figure is known: the core runs on the layer's matmul curve.
  double flash_attention_16bit = 0;

  // The curve for an op: its own when fitted, else its class's.
  const EfficiencyCurve& curve(const std::string& op) const;
  // The curve an op runs on at this precision: curve(op), but a matmul-class op under bf16,
  // fp16 or fp8 tops out at gemm_efficiency_16bit (of the peak it runs against) where the
  // device has that figure.
  EfficiencyCurve curve_at_precision(const std::string& op) const;
  // The peak an op runs against: peak_flops, but under fp8 only the linear layers' GEMMs
  // (and a mixture of experts' expert GEMMs) use FP8 units, as torchao's float8 training and
  // Transformer Engine run them; attention and the rest run at the bf16 peak.
  double peak_for(const std::string& op) const;
};

// The precision a device kind's times mean when none is asked for: tf32 where the device
// has TF32 tensor cores (a100, a100-80gb, h100-sxm, h200: what PyTorch's fp32 training
// uses for convolutions, and what the built-in A100 profile measured), fp32 elsewhere.
Precision default_precision(const DeviceSpec& device);

// The precision one kind runs a step of `step` precision at (the precision policy of a
// mixed cluster): TF32 (FP32 storage, TF32 matrix products) runs as FP32 on a kind without
// TF32 units (a V100), as PyTorch's allow_tf32 does there; storage, memory and messages are
// the same. Every other precision as asked (at_precision refuses a kind that lacks it).
Precision kind_precision(const DeviceSpec& device, Precision step);

// `device` at `precision`: peak_flops from its peaks, activations and weights moved in
// value_bytes(precision). The efficiency curves stay those fitted at the device's default
// precision (docs/cost-model.md, "Precision"). UserError naming the device and the
// precisions it has when it lacks `precision` (fp8 on an A100, bf16 on a V100).
DeviceSpec at_precision(DeviceSpec device, Precision precision);

// The GPUs burst knows (v100, a100, a100-80gb, h100-sxm, h200) with datasheet peaks and
// bandwidth, at their default precision; their curves come from fitting (see fit_device).
// Unknown kinds: UserError.
DeviceSpec catalog_device(const std::string& kind);
std::vector<std::string> catalog_kinds();

// The catalog kind of a GPU by the name CUDA reports for it ("NVIDIA H200" -> "h200",
// "NVIDIA A100-SXM4-80GB" -> "a100-80gb", "Tesla V100-SXM2-32GB" -> "v100"); nullopt for a
// GPU the catalog lacks. What `burst profile --device cuda` names its profile's device.
std::optional<std::string> catalog_kind_of_gpu(const std::string& name);

// How well a fitted model reproduces the profile it was fitted on (or another one).
struct FitError {
  int entries = 0;
  double median_relative = 0;  // median |predicted - measured| / measured, forward+backward
  double mean_relative = 0;
  std::array<double, kOpClassCount> median_by_class{};
  std::array<int, kOpClassCount> entries_by_class{};
};

// Fits overhead, every op class's curve and every measured op kind's curve to `profile`:
// backward_ratio is the median measured backward/forward ratio, then a coarse-to-fine grid
// search over overhead, the utilisation variable, eff_max and x_half minimises the squared
// log error of forward + backward times.
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
  // The part's work: FLOPs and parameters divided by the parts (tensor_split.h's
  // part_params), the input whole for column and heads splits and sliced for row and
  // features splits, the output sliced for column and features splits and whole otherwise.
  // A k-th of a GEMM's columns keeps its rows, so a small split GEMM runs further below peak.
  std::optional<LayerEstimate> estimate_tensor(const graph::Graph& graph, graph::LayerId id, int64_t batch,
                                               const TensorSplit& split) const override;
  // Memory-bound: SGD reads every fp32 weight and its gradient and writes the weight back,
  // 12 bytes per parameter at the device's memory bandwidth.
  std::optional<Seconds> update(const graph::Graph& graph, graph::LayerId id) const override;
  // The same formula from a layer's work (for fitting and for profile entries).
  LayerTime time(const LayerWork& work) const;
  // The roofline's compute time over its compute plus memory time (the attention core's
  // traffic counted as memory): near 1 for a large GEMM, near 0 for an element-wise op.
  double compute_bound_share(const graph::Graph& graph, graph::LayerId id, int64_t batch) const override;
  // What a self_attention layer adds to time(): its [heads, T, T] score matrix moved through
  // memory by the unfused attention core (scores, softmax, dropout, the product with V),
  // forward and backward, for `batch` samples with its heads divided into `parts`; zero for
  // other ops. The roofline of time() counts the core's FLOPs but not this traffic.
  LayerTime attention_core_memory(const graph::Graph& graph, graph::LayerId id, int64_t batch, int64_t parts,
                                  int64_t context = 1) const;
  // time(work) of a layer, but a flash self_attention layer's core (its share of the work's
  // FLOPs, attention_core_forward_share) taken out and run at the device's fused-attention
  // rate where it has one (flash_attention_16bit, 16-bit and fp8 steps): forward F / rate,
  // backward 2.5 F / rate (FlashAttention-2's backward recomputes the scores: five matrix
  // products to the forward's two); plus attention_core_memory for an unfused core.
  LayerTime attention_time(const graph::Graph& graph, graph::LayerId id, LayerWork work, int64_t head_parts,
                           int64_t context) const;
  // What an fp8 GEMM (fp8_gemm) adds to time() under Precision::Fp8: its operands' scaling
  // and casts, memory-bound (docs/cost-model.md, "FP8"); zero otherwise.
  LayerTime fp8_casts(const LayerWork& work) const;
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
  std::optional<LayerEstimate> estimate_split(const graph::Graph& graph, graph::LayerId id,
                                              int64_t batch) const override {
    if (auto measured = primary_->estimate_split(graph, id, batch)) return measured;
    return fallback_ ? fallback_->estimate_split(graph, id, batch) : std::nullopt;
  }
  std::optional<Seconds> update(const graph::Graph& graph, graph::LayerId id) const override {
    if (auto measured = primary_->update(graph, id)) return measured;
    return fallback_ ? fallback_->update(graph, id) : std::nullopt;
  }
  // The analytic fallback's: measurements give times, not what bounds them.
  double compute_bound_share(const graph::Graph& graph, graph::LayerId id, int64_t batch) const override {
    return (fallback_ ? fallback_ : primary_)->compute_bound_share(graph, id, batch);
  }
  // The primary's split time where it has one. Otherwise the fallback's, calibrated where the
  // primary measured the whole layer at that batch: fallback split x primary whole /
  // fallback whole, so a fit's error on the layer does not decide between split and whole.
  std::optional<LayerEstimate> estimate_tensor(const graph::Graph& graph, graph::LayerId id, int64_t batch,
                                               const TensorSplit& split) const override;

 private:
  std::unique_ptr<CostModel> primary_;
  std::unique_ptr<CostModel> fallback_;
};

// A cost model measured at one precision, carried to another by the analytic model: each
// time (forward and backward apart) is the measured one x analytic(target) /
// analytic(measured), so the measurement keeps deciding how a layer differs from the
// roofline and the analytic model only says how the precision moves it (compute-bound
// layers by the ratio of peaks, memory-bound ones by the bytes).
class PrecisionScaledCostModel : public CostModel {
 public:
  PrecisionScaledCostModel(std::unique_ptr<CostModel> measured, DeviceSpec measured_spec, DeviceSpec target_spec)
      : measured_(std::move(measured)), reference_(std::move(measured_spec)), target_(std::move(target_spec)) {}
  std::string device() const override { return measured_->device(); }
  std::optional<LayerEstimate> estimate(const graph::Graph& graph, graph::LayerId id, int64_t batch) const override;
  std::optional<LayerEstimate> estimate_split(const graph::Graph& graph, graph::LayerId id,
                                              int64_t batch) const override;
  std::optional<LayerEstimate> estimate_tensor(const graph::Graph& graph, graph::LayerId id, int64_t batch,
                                               const TensorSplit& split) const override;
  std::optional<Seconds> update(const graph::Graph& graph, graph::LayerId id) const override;
  double compute_bound_share(const graph::Graph& graph, graph::LayerId id, int64_t batch) const override {
    return target_.compute_bound_share(graph, id, batch);
  }

 private:
  // `time` x target / reference, for the analytic estimates of the same call.
  std::optional<LayerEstimate> scaled(std::optional<LayerEstimate> time, const std::optional<LayerEstimate>& reference,
                                      const std::optional<LayerEstimate>& target) const;
  std::unique_ptr<CostModel> measured_;
  AnalyticCostModel reference_;
  AnalyticCostModel target_;
};

}  // namespace burst::cost
