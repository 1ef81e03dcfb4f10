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
  const double efficiency = curve.efficiency(batch, cls == OpClass::Memory ? bytes : flops);
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
  using Scale = EfficiencyCurve::Scale;
  spec.curves = {EfficiencyCurve{0.5, 8, Scale::Batch, 2}, EfficiencyCurve{0.6, 8, Scale::Batch, 2},
                 EfficiencyCurve{0.7, 2, Scale::Batch, 1.5}};
  return spec;
}

struct Sample {
  double flops;   // forward FLOPs at the entry's batch
  double bytes;   // forward bytes at the entry's batch
  int64_t batch;
  double log_total;  // log of measured forward + backward seconds
};

// Squared log error of forward + backward times over `samples` for one class curve.
double class_error(const DeviceSpec& device, OpClass cls, const EfficiencyCurve& curve,
                   const std::vector<Sample>& samples) {
  double error = 0;
  for (const Sample& s : samples) {
    const double predicted =
        roofline(device, cls, curve, s.flops, s.bytes, s.batch).s() * (1 + curve.backward_ratio);
    const double diff = std::log(predicted) - s.log_total;
    error += diff * diff;
  }
  return error;
}

// Best (eff_max, x_half) for one class at a fixed overhead, given the class's backward
// ratio, for both utilisation variables; returns the squared log error. Coarse-to-fine
// search in log space: a 12 x 12 grid, then two 7 x 7 grids around the best point.
double fit_class(const DeviceSpec& device, OpClass cls, const std::vector<Sample>& samples,
                 EfficiencyCurve* curve) {
  using Scale = EfficiencyCurve::Scale;
  double best = std::numeric_limits<double>::infinity();
  for (const Scale scale : {Scale::Batch, Scale::Work}) {
    double eff_lo = 0.002, eff_hi = 1.0;
    double half_lo = scale == Scale::Batch ? 0.05 : 1e2;
    double half_hi = scale == Scale::Batch ? 4096 : 1e13;
    int points = 12;
    EfficiencyCurve candidate = *curve;
    candidate.scale = scale;
    for (int round = 0; round < 3; ++round) {
      const std::vector<double> effs = geometric_grid(eff_lo, eff_hi, points);
      const std::vector<double> halves = geometric_grid(half_lo, half_hi, points);
      EfficiencyCurve round_best = candidate;
      double round_error = std::numeric_limits<double>::infinity();
      for (const double eff : effs) {
        for (const double half : halves) {
          candidate.eff_max = eff;
          candidate.x_half = half;
          const double error = class_error(device, cls, candidate, samples);
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
      // Next round: one grid step either side of the best point (eff_max stays <= 1).
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

}  // namespace

OpClass op_class(const std::string& op_name) {
  if (op_name == "conv2d") return OpClass::Conv;
  if (op_name == "linear" || op_name == "self_attention") return OpClass::Matmul;
  return OpClass::Memory;
}

const char* scale_name(EfficiencyCurve::Scale scale) {
  return scale == EfficiencyCurve::Scale::Batch ? "batch" : "work";
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
                        entry.batch, std::log((entry.forward + entry.backward).s())};
    samples[static_cast<int>(cls)].push_back(sample);
    backward_ratios[static_cast<int>(cls)].push_back(entry.backward / entry.forward);
    min_forward = std::min(min_forward, entry.forward.s());
    if (cls == OpClass::Memory) {
      best_bytes_per_s = std::max(best_bytes_per_s, sample.bytes / entry.forward.s());
    } else {
      best_flops_per_s = std::max(best_flops_per_s, sample.flops / entry.forward.s());
    }
  }
  if (!std::isfinite(min_forward)) {
    throw UserError("cannot fit a device model: the profile has no entry with a positive forward time");
  }
  if (device.kind == "cpu") {
    if (best_flops_per_s > 0) device.peak_flops = best_flops_per_s;
    if (best_bytes_per_s > 0) device.memory_bandwidth = Bandwidth(best_bytes_per_s);
  }
  for (int c = 0; c < kOpClassCount; ++c) {
    if (!backward_ratios[c].empty()) device.curves[c].backward_ratio = median(backward_ratios[c]);
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
