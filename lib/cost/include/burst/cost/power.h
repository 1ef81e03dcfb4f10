#pragma once
// The power model of a device kind (docs/energy.md): what a GPU draws while it computes,
// communicates or waits, and how its SM clock moves both time and power.
//
//   time(c, r)        = t_max x (c / r + 1 - c)
//   compute power     = idle + (max - idle) x (m + (1 - m) x c) x (u + (1 - u) x r^gamma)
//   communication     = idle + (max - idle) x k
//   idle              = idle
//
// r = clock / max_clock in [min_clock / max_clock, 1]; c, the compute-bound share of a
// task's time at the maximum clock (the cost model's compute_bound_share: compute-bound
// work runs at the SM clock, memory-bound work at the memory clock, which a power cap or
// an SM clock setting does not move); m, the dynamic power of memory-bound work relative to
// compute-bound work at the same clock; k, the dynamic power of NCCL kernels and links;
// u, the share of the busy power that the SM clock does not move (memory, I/O, leakage);
// gamma > 1, how much faster than linearly the rest falls with the clock (voltage falls
// with it). A power cap W holds a task at the highest clock whose power is <= W.
// No libtorch.
#include <optional>
#include <string>
#include <vector>

namespace burst::cost {

struct PowerSpec {
  std::string kind;
  double idle_w = 0;          // powered, persistence mode, no kernel running
  double max_w = 0;           // board power limit (the datasheet's maximum)
  double min_clock_mhz = 0;   // the lowest SM clock the board can be set to
  double max_clock_mhz = 0;   // the highest (boost) SM clock
  double memory_bound_share = 0.6;  // m above
  double communication_share = 0.3;  // k above
  double clock_exponent = 2.5;       // gamma above
  double clock_independent_share = 0.3;  // u above
  std::string source;         // where the figures come from

  double min_clock_ratio() const { return min_clock_mhz / max_clock_mhz; }
  double dynamic_w() const { return max_w - idle_w; }
};

// The catalog kinds' power (v100, a100, a100-80gb, h100-sxm, h200); nullopt for another
// kind ("cpu", test kinds): such a device's energy is not modelled.
std::optional<PowerSpec> catalog_power(const std::string& kind);

// How long work of compute-bound share `compute_bound` in [0, 1] that takes `time_at_max`
// at the maximum clock takes at clock ratio `clock_ratio` in (0, 1].
double clocked_time(double time_at_max, double compute_bound, double clock_ratio);

// Power while computing work of compute-bound share `compute_bound` at `clock_ratio`, watts.
double compute_power_w(const PowerSpec& spec, double compute_bound, double clock_ratio);
// Power while communicating (and nothing else), watts.
double communication_power_w(const PowerSpec& spec);

// The highest clock ratio at which work of share `compute_bound` draws at most `cap_w`
// (1 when it does at the maximum clock; the minimum clock when even that draws more).
double highest_clock_under_cap(const PowerSpec& spec, double compute_bound, double cap_w);

// The clock ratio of a task on a device set to `clock_ratio` under an optional power cap
// (0: none): the lower of the two.
double effective_clock(const PowerSpec& spec, double compute_bound, double clock_ratio, double cap_w);

// The clock ratio of `clock_mhz` on this kind; UserError when it is outside the kind's range.
double clock_ratio_of(const PowerSpec& spec, double clock_mhz);

// Throws UserError, naming the values, when `cap_w` is not a power this kind can be capped
// at: below its idle power or above its board maximum (0 is "no cap" and passes).
void check_power_cap(const PowerSpec& spec, double cap_w);

// The clock ratios a clock search steps through for this kind: from 1 down to the minimum
// clock in steps of `step` of the maximum (the last one is the minimum itself).
std::vector<double> clock_ratio_steps(const PowerSpec& spec, double step = 0.025);

}  // namespace burst::cost
