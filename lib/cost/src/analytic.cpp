#include "burst/cost/analytic.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <future>
#include <limits>

#include <fmt/format.h>

#include "burst/cost/memory.h"
#include "burst/util/error.h"

namespace burst::cost {
namespace {


// Geometric grid of `count` values from `low` to `high`.
std::vector<double> geometric_grid(double low, double high, int count) {
  std::vector<double> grid;
  for (int i = 0; i < count; ++i) {
    grid.push_back(low * std::pow(high / low, static_cast<double>(i) / (count - 1)));
  }
  return grid;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto middle = static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), values.begin() + middle, values.end());
  double result = values[static_cast<size_t>(middle)];
  if (values.size() % 2 == 0) {
    result = (result + *std::max_element(values.begin(), values.begin() + middle)) / 2;
  }
  return result;
}

// The roofline time of a call at full efficiency.
double roofline_seconds(const DeviceSpec& device, const LayerWork& work) {
  return std::max(work.flops / device.peak_for(work.op),
                  work.bytes / device.memory_bandwidth.bytes_per_second());
}

// The value of a curve's utilisation variable for `work`.
double utilisation(EfficiencyCurve::Scale scale, const LayerWork& work) {
  switch (scale) {
    case EfficiencyCurve::Scale::Batch: return static_cast<double>(work.batch);
    case EfficiencyCurve::Scale::Work: return op_class(work.op) == OpClass::Memory ? work.bytes : work.flops;
    case EfficiencyCurve::Scale::Rows: return work.rows;
  }
  BURST_ASSERT(false, "unknown scale");
}

Seconds forward_time(const DeviceSpec& device, const EfficiencyCurve& curve, const LayerWork& work) {
  return Seconds(roofline_seconds(device, work) / curve.efficiency(work)) + device.overhead;
}

// Datasheet figures of one GPU, dense TFLOP/s per precision (0: no such units).
struct GpuSheet {
  const char* kind;
  const char* description;
  double fp32, tf32, bf16, fp16, fp8;
  double bandwidth_gb_s, memory_gb;
  double gemm_tflops_16bit = 0;  // best bf16 GEMM rate measured (TFLOP/s; 0: none known)
  double flash_tflops_16bit = 0;  // FlashAttention-2's best forward + backward rate (TFLOP/s; 0: none known)
};

DeviceSpec gpu(const GpuSheet& sheet) {
  using Scale = EfficiencyCurve::Scale;
  DeviceSpec spec;
  spec.kind = sheet.kind;
  spec.description = sheet.description;
  spec.peaks.at(Precision::Fp32) = sheet.fp32 * 1e12;
  spec.peaks.at(Precision::Tf32) = sheet.tf32 * 1e12;
  spec.peaks.at(Precision::Bf16) = sheet.bf16 * 1e12;
  spec.peaks.at(Precision::Fp16) = sheet.fp16 * 1e12;
  spec.peaks.at(Precision::Fp8) = sheet.fp8 * 1e12;
  spec.precision = default_precision(spec);
  spec.peak_flops = spec.peaks.at(spec.precision);
  spec.memory_bandwidth = Bandwidth::gigabytes_per_s(sheet.bandwidth_gb_s);
  spec.memory = Bytes(sheet.memory_gb * 1e9);
  spec.overhead = Seconds::from_us(10);
  spec.gemm_efficiency_16bit = sheet.bf16 > 0 ? sheet.gemm_tflops_16bit / sheet.bf16 : 0;
  spec.flash_attention_16bit = sheet.bf16 > 0 ? sheet.flash_tflops_16bit / sheet.bf16 : 0;
  spec.curves = {EfficiencyCurve{0.5, 8, Scale::Batch, 2}, EfficiencyCurve{0.6, 8, Scale::Batch, 2},
                 EfficiencyCurve{0.7, 2, Scale::Batch, 1.5}};
  return spec;
}

// One measured entry, ready for fitting.
struct Sample {
  LayerWork work;
  double forward;         // measured forward seconds (> 0)
  double backward_ratio;  // measured backward / forward
  double log_total;       // log of measured forward + backward seconds
  double roofline = 0;    // roofline_seconds at full efficiency
  // The utilisation variable under each EfficiencyCurve::Scale, by its index: computed once,
  // as the fit evaluates every sample thousands of times.
  std::array<double, 3> scale_x{};
};

// EfficiencyCurve::efficiency(sample.work), from the precomputed utilisation variable.
double sample_efficiency(const EfficiencyCurve& curve, const Sample& sample) {
  const double x = sample.scale_x[static_cast<size_t>(curve.scale)];
  return curve.eff_max * x / (x + curve.x_half);
}

// Squared log error of forward + backward times over `samples` for one curve.
double curve_error(Seconds overhead, const EfficiencyCurve& curve, const std::vector<const Sample*>& samples) {
  double error = 0;
  for (const Sample* s : samples) {
    const double forward = s->roofline / sample_efficiency(curve, *s) + overhead.s();
    const double diff = std::log(forward * (1 + curve.backward_ratio)) - s->log_total;
    error += diff * diff;
  }
  return error;
}

// Best curve for `samples` at a fixed overhead and backward ratio, over the three
// utilisation variables; returns the squared log error. Coarse-to-fine search in log space:
// a 12 x 12 grid, then two 7 x 7 grids one coarse step around the best point.
double fit_curve(Seconds overhead, const std::vector<const Sample*>& samples, EfficiencyCurve* curve) {
  using Scale = EfficiencyCurve::Scale;
  double best = std::numeric_limits<double>::infinity();
  for (const Scale scale : {Scale::Batch, Scale::Work, Scale::Rows}) {
    double eff_lo = 1e-4, eff_hi = 1.0;
    double half_lo = scale == Scale::Work ? 1e2 : 0.05;
    double half_hi = scale == Scale::Work ? 1e13 : 1e6;
    int points = 12;
    EfficiencyCurve candidate = *curve;
    candidate.scale = scale;
    for (int round = 0; round < 3; ++round) {
      EfficiencyCurve round_best = candidate;
      double round_error = std::numeric_limits<double>::infinity();
      for (const double eff : geometric_grid(eff_lo, eff_hi, points)) {
        for (const double half : geometric_grid(half_lo, half_hi, points)) {
          candidate.eff_max = eff;
          candidate.x_half = half;
          const double error = curve_error(overhead, candidate, samples);
          if (error < round_error) {
            round_error = error;
            round_best = candidate;
          }
        }
      }
      candidate = round_best;
      if (round_error < best) {
        best = round_error;
        *curve = round_best;
      }
      const double eff_step = std::pow(eff_hi / eff_lo, 1.0 / (points - 1));
      const double half_step = std::pow(half_hi / half_lo, 1.0 / (points - 1));
      eff_lo = round_best.eff_max / eff_step;
      eff_hi = std::min(1.0, round_best.eff_max * eff_step);
      half_lo = round_best.x_half / half_step;
      half_hi = round_best.x_half * half_step;
      points = 7;
    }
  }
  return best;
}

// Samples grouped for fitting: by class (the fallbacks) and by op kind.
struct SampleGroups {
  std::array<std::vector<const Sample*>, kOpClassCount> by_class;
  std::map<std::string, std::vector<const Sample*>> by_op;
};

// A CPU's usable peak and bandwidth are whatever its best layers achieved; every precision
// the CPU has is taken at the peak its fp32 layers reached.
void take_best_rates(DeviceSpec& device, const std::vector<Sample>& samples) {
  double best_flops = 0, best_bytes = 0;
  for (const Sample& sample : samples) {
    if (op_class(sample.work.op) == OpClass::Memory) {
      best_bytes = std::max(best_bytes, sample.work.bytes / sample.forward);
    } else {
      best_flops = std::max(best_flops, sample.work.flops / sample.forward);
    }
  }
  if (best_flops > 0) {
    for (double& peak : device.peaks.flops) peak = peak > 0 ? best_flops : 0;
    device.peak_flops = best_flops;
  }
  if (best_bytes > 0) device.memory_bandwidth = Bandwidth(best_bytes);
}

double median_backward_ratio(const std::vector<const Sample*>& samples) {
  std::vector<double> ratios;
  for (const Sample* s : samples) ratios.push_back(s->backward_ratio);
  return median(ratios);
}

// Times the [heads, T, T] score matrix of an unfused attention core spends in memory, as
// Megatron-LM (2021) and PyTorch's eager attention run it, in passes over the matrix
// (docs/cost-model.md, "Attention core"). Forward: the scores' GEMM writes it (1), the
// fused scale-mask-softmax reads and writes it (2), the bmm with V reads it (1); attention
// dropout reads it and writes its output (2) and a 1-byte mask. Backward: the bmm's
// backward writes the probabilities' gradient and reads the probabilities (2), softmax's
// backward reads the gradient and the output and writes the gradient (3), the scores'
// GEMM backward reads it twice, for Q and for K (2); dropout's backward reads and writes
// the gradient (2) and reads the mask.
struct ScorePasses {
  double values;  // passes of value_bytes per element
  double masks;   // passes of one byte per element
};
constexpr ScorePasses kScoreForward{4, 0}, kScoreBackward{7, 0};
constexpr ScorePasses kScoreDropoutForward{2, 1}, kScoreDropoutBackward{2, 1};

// The score matrix's memory traffic of one call, in bytes: `elements` scores x the passes.
double score_bytes(double elements, ScorePasses passes, ScorePasses dropout, bool has_dropout, double value) {
  const double values = passes.values + (has_dropout ? dropout.values : 0);
  const double masks = passes.masks + (has_dropout ? dropout.masks : 0);
  return elements * (values * value + masks);
}

}  // namespace

LayerWork layer_work(const std::string& op, int64_t batch, int64_t flops_per_sample,
                     int64_t input_bytes_per_sample, int64_t output_bytes_per_sample, int64_t params) {
  const double b = static_cast<double>(batch);
  const double outputs = std::max(1.0, static_cast<double>(output_bytes_per_sample) / kFloatBytes);
  // As a GEMM: K = F / (2 outputs) multiply-adds per output, N = params / K columns,
  // so M = outputs / N rows per sample (ops without weights: one column per output).
  const double reduction = std::max(1.0, static_cast<double>(flops_per_sample) / (2 * outputs));
  const double columns = params > 0 ? std::max(1.0, static_cast<double>(params) / reduction) : 1.0;
  LayerWork work;
  work.op = op;
  work.batch = batch;
  work.flops = static_cast<double>(flops_per_sample) * b;
  work.bytes = static_cast<double>(input_bytes_per_sample + output_bytes_per_sample) * b +
               static_cast<double>(params) * kFloatBytes;
  work.rows = b * outputs / columns;
  work.params = static_cast<double>(params);
  return work;
}

double EfficiencyCurve::efficiency(const LayerWork& work) const {
  const double x = utilisation(scale, work);
  return eff_max * x / (x + x_half);
}

const char* scale_name(EfficiencyCurve::Scale scale) {
  switch (scale) {
    case EfficiencyCurve::Scale::Batch: return "batch";
    case EfficiencyCurve::Scale::Work: return "work";
    case EfficiencyCurve::Scale::Rows: return "rows";
  }
  BURST_ASSERT(false, "unknown scale");
}

OpClass op_class(const std::string& op_name) {
  if (op_name == "conv2d" || op_name == "conv3d" || op_name == "conv_transpose2d") return OpClass::Conv;
  if (op_name == "linear" || op_name == "self_attention" || op_name == "matmul" || op_name == "moe") {
    return OpClass::Matmul;
  }
  return OpClass::Memory;
}

const char* op_class_name(OpClass op_class) {
  switch (op_class) {
    case OpClass::Conv: return "conv";
    case OpClass::Matmul: return "matmul";
    case OpClass::Memory: return "memory";
  }
  BURST_ASSERT(false, "unknown op class");
}

const EfficiencyCurve& DeviceSpec::curve(const std::string& op) const {
  const auto found = op_curves.find(op);
  if (found != op_curves.end()) return found->second;
  return curves[static_cast<int>(op_class(op))];
}

std::vector<std::string> catalog_kinds() {
  return {"v100", "a100", "a100-80gb", "h100-sxm", "h200", "b200", "gb200", "cpu"};
}

std::optional<std::string> catalog_kind_of_gpu(const std::string& name) {
  std::string upper;
  for (const char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const auto has = [&upper](const char* part) { return upper.find(part) != std::string::npos; };
  if (has("GB200")) return "gb200";
  if (has("B200")) return "b200";
  if (has("H200")) return "h200";
  // The catalog's H100 is the SXM part; PCIe and NVL H100s have less bandwidth.
  if (has("H100") && (has("SXM") || has("HBM3")) && !has("PCIE") && !has("NVL")) return "h100-sxm";
  if (has("A100")) return has("80GB") ? "a100-80gb" : "a100";
  if (has("V100")) return "v100";
  return std::nullopt;
}

// NVIDIA's datasheets, dense (no structured sparsity): V100 SXM2 (FP32 15.7, FP16 tensor
// cores 125), A100 SXM4 (FP32 19.5, TF32 156, BF16/FP16 312), H100 SXM5 and H200 SXM (FP32
// 67, TF32 494.7, BF16/FP16 989.4, FP8 1978.9); HGX B200 and GB200 NVL72 (their 8- and 72-GPU
// figures per GPU, halved from the sparse ones: B200 FP32 75, TF32 1125, BF16 2250, FP8 4500,
// 180 GB; GB200 FP32 80, TF32 1250, BF16 2500, FP8 5000, 186 GB; HBM3e 8 TB/s both).
// The last figure is the best bf16 GEMM rate measured with cuBLAS (TFLOP/s): the "maximum
// achievable matmul FLOPS" table of S. Bekman's ML Engineering book (mamf-finder.py, CUDA
// 12.1): A100 SXM 267.9 (85.9% of 312), H100 SXM 792.1 (80.1% of 989). None is taken for
// the V100 or the H200 (not in that table). The figure after it is FlashAttention-2's best
// forward + backward rate (Dao 2023, "FlashAttention-2", §4.1: up to 73% of the A100's 312,
// 228 TFLOP/s; "up to 335 TFLOPs/s" on the H100 SXM5, Fig. 7, head dim 128); the H200 has
// the H100's compute and takes its figure; none is known for the V100 (FlashAttention-2
// does not run there) or the Blackwell parts.
const GpuSheet kGpuSheets[] = {
    {"v100", "NVIDIA V100-SXM2-32GB (FP32 15.7, FP16 125 TFLOP/s; 900 GB/s)", 15.7, 0, 0, 125, 0, 900, 32},
    {"a100", "NVIDIA A100-SXM4-40GB (TF32 156, BF16 312 TFLOP/s; 1555 GB/s)", 19.5, 156, 312, 312, 0, 1555, 40,
     267.9, 228},
    {"a100-80gb", "NVIDIA A100-SXM4-80GB (TF32 156, BF16 312 TFLOP/s; 2039 GB/s)", 19.5, 156, 312, 312, 0, 2039, 80,
     267.9, 228},
    {"h100-sxm", "NVIDIA H100-SXM5-80GB (TF32 495, BF16 989, FP8 1979 TFLOP/s dense; 3350 GB/s)", 67, 494.7, 989.4,
     989.4, 1978.9, 3350, 80, 792.1, 335},
    {"h200", "NVIDIA H200-SXM-141GB (TF32 495, BF16 989, FP8 1979 TFLOP/s dense; 4800 GB/s)", 67, 494.7, 989.4,
     989.4, 1978.9, 4800, 141, 0, 335},
    {"b200", "NVIDIA B200 in HGX B200 (TF32 1125, BF16 2250, FP8 4500 TFLOP/s dense; 8000 GB/s)", 75, 1125, 2250,
     2250, 4500, 8000, 180},
    {"gb200", "NVIDIA GB200 NVL72's Blackwell GPU (TF32 1250, BF16 2500, FP8 5000 TFLOP/s dense; 8000 GB/s)", 80,
     1250, 2500, 2500, 5000, 8000, 186},
};

DeviceSpec catalog_device(const std::string& kind) {
  for (const GpuSheet& sheet : kGpuSheets) {
    if (kind == sheet.kind) return gpu(sheet);
  }
  if (kind == "cpu") {
    // Peak and bandwidth are placeholders until fit_device reads them off a local profile;
    // bf16 (torch's CPU autocast) is taken at the fp32 peak, for want of a measured one.
    DeviceSpec spec = gpu(GpuSheet{"cpu", "local CPU (fitted from a profile)", 0.1, 0, 0.1, 0, 0, 10, 16});
    spec.memory = machine_memory();
    spec.overhead = Seconds::from_us(5);
    return spec;
  }
  std::string kinds;
  for (const auto& known : catalog_kinds()) kinds += (kinds.empty() ? "" : ", ") + known;
  throw UserError(fmt::format("unknown device kind '{}' (known: {})", kind, kinds));
}

EfficiencyCurve DeviceSpec::curve_at_precision(const std::string& op) const {
  EfficiencyCurve chosen = curve(op);
  // fp8 steps keep 16-bit operands for all but their fp8 GEMMs, which are taken at the same
  // share of their (fp8) peak: the source of gemm_efficiency_16bit measures no fp8 GEMM.
  const bool sixteen_bit = precision == Precision::Bf16 || precision == Precision::Fp16 || precision == Precision::Fp8;
  if (sixteen_bit && op_class(op) == OpClass::Matmul && gemm_efficiency_16bit > 0) {
    chosen.eff_max = gemm_efficiency_16bit;
  }
  return chosen;
}

bool fp8_gemm(const std::string& op) { return op == "linear" || op == "moe"; }

double DeviceSpec::peak_for(const std::string& op) const {
  if (precision == Precision::Fp8 && !fp8_gemm(op)) return peaks.at(Precision::Bf16);
  return peak_flops;
}

Precision default_precision(const DeviceSpec& device) {
  return device.peaks.supports(Precision::Tf32) ? Precision::Tf32 : Precision::Fp32;
}

Precision kind_precision(const DeviceSpec& device, Precision step) {
  if (step == Precision::Tf32 && !device.peaks.supports(Precision::Tf32)) return Precision::Fp32;
  return step;
}

DeviceSpec at_precision(DeviceSpec device, Precision precision) {
  if (!device.peaks.supports(precision)) {
    std::string known;
    for (int p = 0; p < kPrecisionCount; ++p) {
      if (device.peaks.flops[static_cast<size_t>(p)] > 0) {
        known += (known.empty() ? "" : ", ") + std::string(precision_name(static_cast<Precision>(p)));
      }
    }
    throw UserError(fmt::format("device '{}' has no {} units (it computes in: {})", device.kind,
                                precision_name(precision), known));
  }
  device.precision = precision;
  device.peak_flops = device.peaks.at(precision);
  return device;
}

LayerTime AnalyticCostModel::time(const LayerWork& work) const {
  const EfficiencyCurve curve = device_.curve_at_precision(work.op);
  // LayerWork counts fp32 values; the step moves value_bytes each.
  LayerWork moved = work;
  moved.bytes *= value_bytes(device_.precision) / kFloatBytes;
  const Seconds forward = forward_time(device_, curve, moved);
  return LayerTime{forward, forward * curve.backward_ratio} + fp8_casts(work);
}

LayerTime AnalyticCostModel::fp8_casts(const LayerWork& work) const {
  if (device_.precision != Precision::Fp8 || !fp8_gemm(work.op)) return LayerTime{};
  // Tensor-wise dynamic scaling of a GEMM's bf16 operands: each is read for its absolute
  // maximum, read again and written as fp8 (2 + 2 + 1 bytes an element). Forward casts the
  // input and the weights; backward the output's gradient, and writes and reads transposed
  // fp8 copies of all three (1 + 1 bytes), since FP8 tensor cores take one layout only.
  // LayerWork counts activations in and out together: half of them are taken as the input.
  const double weights = std::min(std::max(0.0, work.bytes / kFloatBytes), work.params);
  const double activations = std::max(0.0, work.bytes / kFloatBytes - weights);
  const double forward_bytes = 5 * (activations / 2 + weights);
  const double backward_bytes = 5 * (activations / 2) + 2 * (activations + weights);
  const double rate = device_.memory_bandwidth.bytes_per_second() * device_.curves[static_cast<int>(OpClass::Memory)].eff_max;
  if (!(rate > 0)) return LayerTime{};
  return LayerTime{Seconds(forward_bytes / rate), Seconds(backward_bytes / rate)};
}

std::optional<Seconds> AnalyticCostModel::update(const graph::Graph& graph, graph::LayerId id) const {
  const int64_t params = graph.info(id).params;
  if (params == 0) return Seconds(0);
  if (!(device_.memory_bandwidth.bytes_per_second() > 0)) return std::nullopt;
  constexpr double kBytesPerParameter = 12;  // read weight and gradient, write weight (fp32)
  return Bytes(kBytesPerParameter * static_cast<double>(params)) / device_.memory_bandwidth;
}

LayerTime AnalyticCostModel::attention_core_memory(const graph::Graph& graph, graph::LayerId id, int64_t batch,
                                                   int64_t parts, int64_t context) const {
  if (graph.layer(id).op() != graph::OpKind::SelfAttention) return LayerTime{};
  const auto& attrs = std::get<graph::SelfAttentionAttrs>(graph.layer(id).attrs);
  if (attrs.flash) return LayerTime{};  // a fused kernel keeps the scores on chip
  const double tokens = static_cast<double>(graph.info(id).output_shape.at(0));
  // Under context parallelism a rank holds 1/context of the (causally balanced) score blocks.
  const double elements = static_cast<double>(attrs.heads / parts) * tokens * tokens * static_cast<double>(batch) /
                          static_cast<double>(context);
  const double value = value_bytes(device_.precision);
  const bool dropout = attrs.dropout > 0;
  // Element-wise kernels on the device's memory curve (the "softmax" op's: its class's where
  // the profile has no softmax); no launch overhead of their own, the layer's covers it.
  const EfficiencyCurve curve = device_.curve_at_precision("softmax");
  const auto seconds = [&](double bytes) {
    LayerWork work;
    work.op = "softmax";
    work.batch = batch;
    work.bytes = bytes;
    work.rows = elements;
    return Seconds(roofline_seconds(device_, work) / curve.efficiency(work));
  };
  return LayerTime{seconds(score_bytes(elements, kScoreForward, kScoreDropoutForward, dropout, value)),
                   seconds(score_bytes(elements, kScoreBackward, kScoreDropoutBackward, dropout, value))};
}

std::optional<LayerEstimate> AnalyticCostModel::estimate(const graph::Graph& graph,
                                                         graph::LayerId id, int64_t batch) const {
  // A model input computes nothing: feeding it is the data pipeline's (and, across devices,
  // the network model's) business. `burst profile` records inputs as 0 for the same reason.
  if (graph.layer(id).op() == graph::OpKind::Input) {
    return LayerEstimate{LayerTime{}, CostSource::Analytic};
  }
  int64_t input_bytes = 0;
  for (const graph::LayerId input : graph.inputs(id)) input_bytes += graph.info(input).output_bytes;
  const auto& info = graph.info(id);
  const LayerWork work = layer_work(graph::op_name(graph.layer(id).op()), batch, info.forward_flops,
                                    input_bytes, info.output_bytes, info.params);
  return LayerEstimate{attention_time(graph, id, work, 1, 1), CostSource::Analytic};
}

double AnalyticCostModel::compute_bound_share(const graph::Graph& graph, graph::LayerId id, int64_t batch) const {
  if (graph.layer(id).op() == graph::OpKind::Input) return 0;
  int64_t input_bytes = 0;
  for (const graph::LayerId input : graph.inputs(id)) input_bytes += graph.info(input).output_bytes;
  const auto& info = graph.info(id);
  const LayerWork work = layer_work(graph::op_name(graph.layer(id).op()), batch, info.forward_flops, input_bytes,
                                    info.output_bytes, info.params);
  const double bandwidth = device_.memory_bandwidth.bytes_per_second();
  const double peak = device_.peak_for(work.op);
  if (!(bandwidth > 0) || !(peak > 0)) return 1.0;
  const double compute_s = work.flops / peak;
  const double memory_s = work.bytes * value_bytes(device_.precision) / kFloatBytes / bandwidth +
                          attention_core_memory(graph, id, batch, 1).forward.s();
  return compute_s + memory_s > 0 ? compute_s / (compute_s + memory_s) : 0.0;
}

std::optional<LayerEstimate> AnalyticCostModel::estimate_tensor(const graph::Graph& graph, graph::LayerId id,
                                                                int64_t batch, const TensorSplit& split) const {
  if (!divides_weights(split.kind) && !divides_output(split.kind) && !split.divides_tokens()) {
    return estimate(graph, id, batch);
  }
  const int64_t k = divides_weights(split.kind) || divides_output(split.kind) ? split.parts : 1;
  const int64_t c = split.context;  // each rank's share of the tokens: 1/c of everything
  int64_t input_bytes = 0;
  for (const graph::LayerId input : graph.inputs(id)) input_bytes += graph.info(input).output_bytes;
  const auto& info = graph.info(id);
  const LayerWork work = layer_work(graph::op_name(graph.layer(id).op()), batch, info.forward_flops / (k * c),
                                    (divides_input(split.kind) ? input_bytes / k : input_bytes) / c,
                                    (divides_output(split.kind) ? info.output_bytes / k : info.output_bytes) / c,
                                    part_params(graph, id, split));
  const int64_t head_parts = split.kind == SplitKind::Heads ? k : 1;
  return LayerEstimate{attention_time(graph, id, work, head_parts, c), CostSource::Analytic};
}

LayerTime AnalyticCostModel::attention_time(const graph::Graph& graph, graph::LayerId id, LayerWork work,
                                            int64_t head_parts, int64_t context) const {
  const auto* attrs = std::get_if<graph::SelfAttentionAttrs>(&graph.layer(id).attrs);
  const double rate = device_.flash_attention_16bit * device_.peaks.at(Precision::Bf16);
  const bool fused = attrs != nullptr && attrs->flash && rate > 0 &&
                     (device_.precision == Precision::Bf16 || device_.precision == Precision::Fp16 ||
                      device_.precision == Precision::Fp8);
  if (!fused) return time(work) + attention_core_memory(graph, id, work.batch, head_parts, context);
  const double core = work.flops * attention_core_forward_share(graph, id);
  work.flops -= core;
  return time(work) + LayerTime{Seconds(core / rate), Seconds(2.5 * core / rate)};
}

std::optional<LayerEstimate> LayeredCostModel::estimate_tensor(const graph::Graph& graph, graph::LayerId id,
                                                               int64_t batch, const TensorSplit& split) const {
  if (auto measured = primary_->estimate_tensor(graph, id, batch, split)) return measured;
  if (!fallback_) return std::nullopt;
  auto part = fallback_->estimate_tensor(graph, id, batch, split);
  if (!part) return std::nullopt;
  const auto measured = primary_->estimate(graph, id, batch);
  const auto modelled = fallback_->estimate(graph, id, batch);
  if (measured && modelled && modelled->time.forward.s() > 0 && modelled->time.backward.s() > 0) {
    part->time.forward = part->time.forward * (measured->time.forward / modelled->time.forward);
    part->time.backward = part->time.backward * (measured->time.backward / modelled->time.backward);
  }
  return part;
}

namespace {

struct FittedCandidate {
  double error;  // squared log error summed over the per-op curves
  DeviceSpec device;
};

// Every curve of `device` fitted at one fixed overhead.
FittedCandidate fit_at_overhead(const DeviceSpec& device, const SampleGroups& groups, Seconds overhead) {
  FittedCandidate fitted{0, device};
  fitted.device.overhead = overhead;
  for (int c = 0; c < kOpClassCount; ++c) {
    if (!groups.by_class[c].empty()) fit_curve(overhead, groups.by_class[c], &fitted.device.curves[c]);
  }
  for (const auto& [op, members] : groups.by_op) {
    fitted.error += fit_curve(overhead, members, &fitted.device.op_curves[op]);
  }
  return fitted;
}

}  // namespace

// Long: the fit's samples, candidates and search share one set of
// per-sample arrays built at its start.
DeviceSpec fit_device(DeviceSpec device, const Profile& profile) {
  std::vector<Sample> samples;
  for (const ProfileEntry& entry : profile.entries) {
    if (entry.forward.s() <= 0) continue;
    samples.push_back(Sample{layer_work(entry.op, entry.batch, entry.forward_flops_per_sample,
                                        entry.input_bytes_per_sample, entry.output_bytes_per_sample,
                                        entry.params),
                             entry.forward.s(), entry.backward / entry.forward,
                             std::log((entry.forward + entry.backward).s())});
  }
  if (samples.empty()) {
    throw UserError("cannot fit a device model: the profile has no entry with a positive forward time");
  }
  double min_forward = std::numeric_limits<double>::infinity();
  if (device.kind == "cpu") take_best_rates(device, samples);
  SampleGroups groups;
  for (Sample& sample : samples) {
    sample.roofline = roofline_seconds(device, sample.work);
    for (const auto scale : {EfficiencyCurve::Scale::Batch, EfficiencyCurve::Scale::Work, EfficiencyCurve::Scale::Rows}) {
      sample.scale_x[static_cast<size_t>(scale)] = utilisation(scale, sample.work);
    }
    min_forward = std::min(min_forward, sample.forward);
    groups.by_class[static_cast<int>(op_class(sample.work.op))].push_back(&sample);
    groups.by_op[sample.work.op].push_back(&sample);
  }
  for (int c = 0; c < kOpClassCount; ++c) {
    if (!groups.by_class[c].empty()) {
      device.curves[c].backward_ratio = median_backward_ratio(groups.by_class[c]);
    }
  }
  device.op_curves.clear();
  for (const auto& [op, members] : groups.by_op) {
    EfficiencyCurve curve = device.curves[static_cast<int>(op_class(op))];
    curve.backward_ratio = median_backward_ratio(members);
    device.op_curves[op] = curve;
  }
  // Overhead is shared by all ops: try a grid below the fastest measured layer. The
  // candidates are independent fits, run concurrently; the first best one wins, as in order.
  std::vector<std::future<FittedCandidate>> fits;
  for (const double overhead : geometric_grid(min_forward * 0.01, min_forward * 0.99, 8)) {
    fits.push_back(std::async(std::launch::async, [&device, &groups, overhead] {
      return fit_at_overhead(device, groups, Seconds(overhead));
    }));
  }
  FittedCandidate best{std::numeric_limits<double>::infinity(), device};
  for (auto& fit : fits) {
    FittedCandidate candidate = fit.get();
    if (candidate.error < best.error) best = std::move(candidate);
  }
  return best.device;
}

FitError evaluate_fit(const DeviceSpec& device, const Profile& profile) {
  const AnalyticCostModel model(device);
  std::vector<double> all;
  std::array<std::vector<double>, kOpClassCount> by_class;
  for (const ProfileEntry& entry : profile.entries) {
    const double measured = (entry.forward + entry.backward).s();
    if (measured <= 0) continue;
    const LayerTime predicted =
        model.time(layer_work(entry.op, entry.batch, entry.forward_flops_per_sample,
                              entry.input_bytes_per_sample, entry.output_bytes_per_sample, entry.params));
    const double error = std::fabs(predicted.total().s() - measured) / measured;
    all.push_back(error);
    by_class[static_cast<int>(op_class(entry.op))].push_back(error);
  }
  FitError fit;
  fit.entries = static_cast<int>(all.size());
  fit.median_relative = median(all);
  double sum = 0;
  for (const double e : all) sum += e;
  fit.mean_relative = all.empty() ? 0 : sum / static_cast<double>(all.size());
  for (int c = 0; c < kOpClassCount; ++c) {
    fit.median_by_class[c] = median(by_class[c]);
    fit.entries_by_class[c] = static_cast<int>(by_class[c].size());
  }
  return fit;
}

DeviceSpec with_curves_of(DeviceSpec target, const DeviceSpec& fitted) {
  target.curves = fitted.curves;
  target.op_curves = fitted.op_curves;
  target.overhead = fitted.overhead;
  return target;
}

namespace {

Seconds ratio_of(Seconds time, Seconds target, Seconds reference) {
  return reference.s() > 0 ? time * (target / reference) : time;
}

}  // namespace

std::optional<LayerEstimate> PrecisionScaledCostModel::scaled(std::optional<LayerEstimate> time,
                                                              const std::optional<LayerEstimate>& reference,
                                                              const std::optional<LayerEstimate>& target) const {
  if (!time || !reference || !target) return time;
  time->time.forward = ratio_of(time->time.forward, target->time.forward, reference->time.forward);
  time->time.backward = ratio_of(time->time.backward, target->time.backward, reference->time.backward);
  return time;
}

std::optional<LayerEstimate> PrecisionScaledCostModel::estimate(const graph::Graph& graph, graph::LayerId id,
                                                                int64_t batch) const {
  return scaled(measured_->estimate(graph, id, batch), reference_.estimate(graph, id, batch),
                target_.estimate(graph, id, batch));
}

std::optional<LayerEstimate> PrecisionScaledCostModel::estimate_split(const graph::Graph& graph, graph::LayerId id,
                                                                      int64_t batch) const {
  return scaled(measured_->estimate_split(graph, id, batch), reference_.estimate(graph, id, batch),
                target_.estimate(graph, id, batch));
}

std::optional<LayerEstimate> PrecisionScaledCostModel::estimate_tensor(const graph::Graph& graph, graph::LayerId id,
                                                                       int64_t batch, const TensorSplit& split) const {
  return scaled(measured_->estimate_tensor(graph, id, batch, split),
                reference_.estimate_tensor(graph, id, batch, split), target_.estimate_tensor(graph, id, batch, split));
}

std::optional<Seconds> PrecisionScaledCostModel::update(const graph::Graph& graph, graph::LayerId id) const {
  const auto time = measured_->update(graph, id);
  const auto reference = reference_.update(graph, id), target = target_.update(graph, id);
  if (!time || !reference || !target) return time;
  return ratio_of(*time, *target, *reference);
}

}  // namespace burst::cost
