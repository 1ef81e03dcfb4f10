#include "burst/cost/power.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::cost {
namespace {

// gamma and u: the medians over the four GPUs of the Zeus power-limit traces of their fitted
// values (docs/energy.md, "Fit"; `burst power-fit data/zeus-power-traces`: gamma 2.8, 1.0,
// 1.0, 2.0 and u 0.30, 0.20, 0.26, 0.34 on v100, a40, p100, rtx6000). m and k are
// assumptions the traces cannot fit (single-GPU training, no communication).
constexpr double kMemoryBoundShare = 0.6;
constexpr double kCommunicationShare = 0.3;
constexpr double kClockExponent = 1.5;
constexpr double kClockIndependentShare = 0.28;

PowerSpec sheet(const char* kind, double idle_w, double max_w, double min_mhz, double max_mhz, const char* source) {
  PowerSpec spec;
  spec.kind = kind;
  spec.idle_w = idle_w;
  spec.max_w = max_w;
  spec.min_clock_mhz = min_mhz;
  spec.max_clock_mhz = max_mhz;
  spec.memory_bound_share = kMemoryBoundShare;
  spec.communication_share = kCommunicationShare;
  spec.clock_exponent = kClockExponent;
  spec.clock_independent_share = kClockIndependentShare;
  spec.source = source;
  return spec;
}

}  // namespace

std::optional<PowerSpec> catalog_power(const std::string& kind) {
  // Board maxima and clock ranges: NVIDIA's datasheets and `nvidia-smi -q -d SUPPORTED_CLOCKS`;
  // idle: persistence-mode readings of an idle board (docs/energy.md lists the sources).
  if (kind == "v100") return sheet("v100", 40, 300, 135, 1530, "Tesla V100 SXM2 datasheet; idle reading");
  if (kind == "a100") return sheet("a100", 55, 400, 210, 1410, "A100 SXM4 datasheet; idle reading");
  if (kind == "a100-80gb") return sheet("a100-80gb", 60, 400, 210, 1410, "A100 SXM4 80GB datasheet; idle reading");
  if (kind == "h100-sxm") return sheet("h100-sxm", 70, 700, 345, 1980, "H100 SXM5 datasheet; idle reading");
  if (kind == "h200") return sheet("h200", 80, 700, 345, 1980, "H200 SXM datasheet; idle reading");
  return std::nullopt;
}

double clocked_time(double time_at_max, double compute_bound, double clock_ratio) {
  BURST_ASSERT(clock_ratio > 0 && clock_ratio <= 1 + 1e-12, "a clock ratio outside (0, 1]");
  return time_at_max * (compute_bound / clock_ratio + 1 - compute_bound);
}

namespace {

// The busy power above idle at the maximum clock of work of share `compute_bound`, watts.
double busy_dynamic_w(const PowerSpec& spec, double compute_bound) {
  return spec.dynamic_w() * (spec.memory_bound_share + (1 - spec.memory_bound_share) * compute_bound);
}

}  // namespace

double compute_power_w(const PowerSpec& spec, double compute_bound, double clock_ratio) {
  const double u = spec.clock_independent_share;
  const double scaled = clock_ratio == 1.0 ? 1.0 : std::pow(clock_ratio, spec.clock_exponent);  // most tasks: full clock
  return spec.idle_w + busy_dynamic_w(spec, compute_bound) * (u + (1 - u) * scaled);
}

double communication_power_w(const PowerSpec& spec) {
  return spec.idle_w + spec.dynamic_w() * spec.communication_share;
}

double highest_clock_under_cap(const PowerSpec& spec, double compute_bound, double cap_w) {
  if (compute_power_w(spec, compute_bound, 1.0) <= cap_w) return 1.0;
  // cap = idle + dynamic x (u + (1 - u) r^gamma), solved for r.
  const double dynamic = busy_dynamic_w(spec, compute_bound);
  const double u = spec.clock_independent_share;
  const double scaled = dynamic > 0 ? ((cap_w - spec.idle_w) / dynamic - u) / (1 - u) : 0;
  if (!(scaled > 0)) return spec.min_clock_ratio();
  return std::clamp(std::pow(scaled, 1.0 / spec.clock_exponent), spec.min_clock_ratio(), 1.0);
}

double effective_clock(const PowerSpec& spec, double compute_bound, double clock_ratio, double cap_w) {
  if (cap_w <= 0) return clock_ratio;
  return std::min(clock_ratio, highest_clock_under_cap(spec, compute_bound, cap_w));
}

double clock_ratio_of(const PowerSpec& spec, double clock_mhz) {
  if (!(clock_mhz >= spec.min_clock_mhz - 1e-9 && clock_mhz <= spec.max_clock_mhz + 1e-9)) {
    throw UserError(fmt::format("clock {} MHz is outside {}'s range [{}, {}] MHz", clock_mhz, spec.kind,
                                spec.min_clock_mhz, spec.max_clock_mhz));
  }
  return clock_mhz / spec.max_clock_mhz;
}

void check_power_cap(const PowerSpec& spec, double cap_w) {
  if (cap_w == 0) return;
  if (!std::isfinite(cap_w) || cap_w <= spec.idle_w || cap_w > spec.max_w) {
    throw UserError(fmt::format("power cap {} W is outside {}'s range: above its idle power {} W and at most its "
                                "board maximum {} W",
                                cap_w, spec.kind, spec.idle_w, spec.max_w));
  }
}

std::vector<double> clock_ratio_steps(const PowerSpec& spec, double step) {
  std::vector<double> ratios;
  for (double ratio = 1.0; ratio > spec.min_clock_ratio() + 1e-9; ratio -= step) ratios.push_back(ratio);
  ratios.push_back(spec.min_clock_ratio());
  return ratios;
}

}  // namespace burst::cost
