#include "burst/cost/analytic.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::cost {
namespace {

constexpr double kFloatBytes = 4;

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
  const size_t middle = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle), values.end());
  double result = values[middle];
  if (values.size() % 2 == 0) {
    result = (result + *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle))) / 2;
  }
  return result;
}

int64_t entry_bytes_per_sample(const ProfileEntry& entry) {
  return entry.input_bytes_per_sample + entry.output_bytes_per_sample;
}

// Forward time of the roofline for one class curve (see analytic.h).
Seconds roofline(const DeviceSpec& device, OpClass cls, const EfficiencyCurve& curve,
                 double flops, double bytes, int64_t batch) {
  const double efficiency = curve.efficiency(batch);
  // Compute-bound classes scale peak FLOP/s by the curve; the memory class scales bandwidth.
  const double compute = cls == OpClass::Memory ? flops / device.peak_flops
                                                : flops / (device.peak_flops * efficiency);
  const double bandwidth = device.memory_bandwidth.bytes_per_second() *
                           (cls == OpClass::Memory ? efficiency : 1.0);
  return Seconds(std::max(compute, bytes / bandwidth)) + device.overhead;
}

DeviceSpec gpu(std::string kind, std::string description, double peak_tflops, double bandwidth_gb_s,
               double memory_gb) {
  DeviceSpec spec;
  spec.kind = std::move(kind);
  spec.description = std::move(description);
  spec.peak_flops = peak_tflops * 1e12;
  spec.memory_bandwidth = Bandwidth::gigabytes_per_s(bandwidth_gb_s);
  spec.memory = Bytes(memory_gb * 1e9);
  spec.overhead = Seconds::from_us(10);
  spec.curves = {EfficiencyCurve{0.5, 8, 2}, EfficiencyCurve{0.6, 8, 2}, EfficiencyCurve{0.7, 2, 1.5}};
  return spec;
}

struct Sample {
  double flops;   // forward FLOPs at the entry's batch
  double bytes;   // forward bytes at the entry's batch
  int64_t batch;
  double log_forward;
};

// Best (eff_max, b_half) for one class at a fixed overhead; returns the squared log error.
double fit_class(const DeviceSpec& device, OpClass cls, const std::vector<Sample>& samples,
                 EfficiencyCurve* curve) {
  static const std::vector<double> kEffGrid = geometric_grid(0.002, 1.0, 48);
  static const std::vector<double> kHalfGrid = geometric_grid(0.05, 4096, 48);
  double best = std::numeric_limits<double>::infinity();
  EfficiencyCurve candidate = *curve;
  for (const double eff : kEffGrid) {
    for (const double half : kHalfGrid) {
      candidate.eff_max = eff;
      candidate.b_half = half;
      double error = 0;
      for (const Sample& s : samples) {
        const double predicted = roofline(device, cls, candidate, s.flops, s.bytes, s.batch).s();
        const double diff = std::log(predicted) - s.log_forward;
        error += diff * diff;
      }
      if (error < best) {
        best = error;
        *curve = candidate;
      }
    }
  }
  return best;
}

}  // namespace

OpClass op_class(const std::string& op_name) {
  if (op_name == "conv2d") return OpClass::Conv;
  if (op_name == "linear" || op_name == "self_attention") return OpClass::Matmul;
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

std::vector<std::string> catalog_kinds() { return {"v100", "a100", "a100-80gb", "h100-sxm", "h200", "cpu"}; }

DeviceSpec catalog_device(const std::string& kind) {
  // Datasheet peaks for the precision PyTorch uses by default for fp32 training:
  // TF32 tensor cores (dense) on A100/H100/H200, plain FP32 on V100.
  if (kind == "v100") return gpu(kind, "NVIDIA V100-SXM2-32GB (FP32 15.7 TFLOP/s, 900 GB/s)", 15.7, 900, 32);
  if (kind == "a100") return gpu(kind, "NVIDIA A100-SXM4-40GB (TF32 156 TFLOP/s, 1555 GB/s)", 156, 1555, 40);
  if (kind == "a100-80gb") return gpu(kind, "NVIDIA A100-SXM4-80GB (TF32 156 TFLOP/s, 2039 GB/s)", 156, 2039, 80);
  if (kind == "h100-sxm") return gpu(kind, "NVIDIA H100-SXM5-80GB (TF32 495 TFLOP/s dense, 3350 GB/s)", 494.7, 3350, 80);
  if (kind == "h200") return gpu(kind, "NVIDIA H200-SXM-141GB (TF32 495 TFLOP/s dense, 4800 GB/s)", 494.7, 4800, 141);
  if (kind == "cpu") {
    // Peak and bandwidth are placeholders until fit_device reads them off a local profile.
    DeviceSpec spec = gpu(kind, "local CPU (fitted from a profile)", 0.1, 10, 16);
    spec.overhead = Seconds::from_us(5);
    return spec;
  }
  std::string kinds;
  for (const auto& known : catalog_kinds()) kinds += (kinds.empty() ? "" : ", ") + known;
  throw UserError(fmt::format("unknown device kind '{}' (known: {})", kind, kinds));
}

LayerTime AnalyticCostModel::time(const std::string& op, int64_t flops_per_sample,
                                  int64_t bytes_per_sample, int64_t params, int64_t batch) const {
  const OpClass cls = op_class(op);
  const EfficiencyCurve& curve = device_.curves[static_cast<int>(cls)];
  const double b = static_cast<double>(batch);
  const double flops = static_cast<double>(flops_per_sample) * b;
  const double bytes = static_cast<double>(bytes_per_sample) * b + static_cast<double>(params) * kFloatBytes;
  const Seconds forward = roofline(device_, cls, curve, flops, bytes, batch);
  return LayerTime{forward, forward * curve.backward_ratio};
}

std::optional<LayerEstimate> AnalyticCostModel::estimate(const graph::Graph& graph,
                                                         graph::LayerId id, int64_t batch) const {
  int64_t input_bytes = 0;
  for (const graph::LayerId input : graph.inputs(id)) input_bytes += graph.info(input).output_bytes;
  const auto& info = graph.info(id);
  return LayerEstimate{time(graph::op_name(graph.layer(id).op()), info.forward_flops,
                            input_bytes + info.output_bytes, info.params, batch),
                       CostSource::Analytic};
}

DeviceSpec fit_device(DeviceSpec device, const Profile& profile) {
  if (profile.entries.empty()) throw UserError("cannot fit a device model to an empty profile");
  std::array<std::vector<Sample>, kOpClassCount> samples;
  std::array<std::vector<double>, kOpClassCount> backward_ratios;
  double best_flops_per_s = 0, best_bytes_per_s = 0, min_forward = std::numeric_limits<double>::infinity();
  for (const ProfileEntry& entry : profile.entries) {
    if (entry.forward.s() <= 0) continue;
    const OpClass cls = op_class(entry.op);
    const double b = static_cast<double>(entry.batch);
    const Sample sample{static_cast<double>(entry.forward_flops_per_sample) * b,
                        static_cast<double>(entry_bytes_per_sample(entry)) * b +
                            static_cast<double>(entry.params) * kFloatBytes,
                        entry.batch, std::log(entry.forward.s())};
    samples[static_cast<int>(cls)].push_back(sample);
    backward_ratios[static_cast<int>(cls)].push_back(entry.backward / entry.forward);
    min_forward = std::min(min_forward, entry.forward.s());
    if (cls == OpClass::Memory) {
      best_bytes_per_s = std::max(best_bytes_per_s, sample.bytes / entry.forward.s());
    } else {
      best_flops_per_s = std::max(best_flops_per_s, sample.flops / entry.forward.s());
    }
  }
  if (device.kind == "cpu") {
    if (best_flops_per_s > 0) device.peak_flops = best_flops_per_s;
    if (best_bytes_per_s > 0) device.memory_bandwidth = Bandwidth(best_bytes_per_s);
  }
  // Overhead is shared by all classes: try a grid below the fastest measured layer.
  double best_total = std::numeric_limits<double>::infinity();
  DeviceSpec best = device;
  for (const double overhead : geometric_grid(min_forward * 0.01, min_forward * 0.99, 16)) {
    DeviceSpec candidate = device;
    candidate.overhead = Seconds(overhead);
    double total = 0;
    for (int c = 0; c < kOpClassCount; ++c) {
      if (samples[c].empty()) continue;
      total += fit_class(candidate, static_cast<OpClass>(c), samples[c], &candidate.curves[c]);
    }
    if (total < best_total) {
      best_total = total;
      best = candidate;
    }
  }
  for (int c = 0; c < kOpClassCount; ++c) {
    if (!backward_ratios[c].empty()) best.curves[c].backward_ratio = median(backward_ratios[c]);
  }
  return best;
}

FitError evaluate_fit(const DeviceSpec& device, const Profile& profile) {
  const AnalyticCostModel model(device);
  std::vector<double> all;
  std::array<std::vector<double>, kOpClassCount> by_class;
  for (const ProfileEntry& entry : profile.entries) {
    const double measured = (entry.forward + entry.backward).s();
    if (measured <= 0) continue;
    const LayerTime predicted = model.time(entry.op, entry.forward_flops_per_sample,
                                           entry_bytes_per_sample(entry), entry.params, entry.batch);
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
  target.overhead = fitted.overhead;
  return target;
}

}  // namespace burst::cost
