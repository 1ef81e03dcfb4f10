#pragma once
// Fitting the power model's clock constants (power.h: gamma, u, and each workload's
// compute-bound share c) to measured power-limit traces: the Zeus traces shipped in
// data/zeus-power-traces (time per epoch and average power of one GPU at each power limit).
//
// A row group is one (network, batch size, optimizer) on one GPU. Its row at the highest
// power limit is its anchor: the time and power at the maximum clock. At a lower limit L
// the model runs the workload at the clock where its power reaches L (power.h's cap rule,
// with the anchor's power as the busy power at the maximum clock) and predicts
//   time  = anchor time x (c / r + 1 - c),     power = min(L, anchor power)
// (the power at the minimum clock where even that is above L).
//
// Fitted rows: every anchor, and every row of one optimizer's group at every other batch
// size of each network (the smallest, the third smallest, ...). The other rows are held
// out: the fit's error is reported on them. No libtorch.
#include <map>
#include <string>
#include <vector>

#include "burst/cost/power.h"

namespace burst::cost {

struct PowerTraceRow {
  std::string network;
  int64_t batch = 0;
  std::string optimizer;
  double limit_w = 0;
  double time_s = 0;   // per epoch
  double power_w = 0;  // average
};

// Reads a summary_power_*.csv file. UserError naming the file and line for a malformed row.
std::vector<PowerTraceRow> load_power_trace(const std::string& path);

// The GPU a Zeus trace was measured on (v100: the 250 W PCIe card; a40, p100, rtx6000):
// board maximum, idle power and clock range. UserError for another name.
PowerSpec power_trace_device(const std::string& kind);

struct PowerFitRow {
  PowerTraceRow row;
  bool fitted = false;  // used by the fit (an anchor or a fitting group's row)
  double predicted_time_s = 0;
  double predicted_power_w = 0;
  double time_error() const;   // |predicted - measured| / measured
  double power_error() const;
};

struct PowerFit {
  PowerSpec device;                            // with the fitted gamma and u
  std::map<std::string, double> compute_bound;  // per network
  std::vector<PowerFitRow> rows;
  double held_out_median_time_error = 0;
  double held_out_median_power_error = 0;
  int held_out = 0;
};

// Fits gamma, u and each network's c to `rows` measured on `device` (grid search over the
// squared log error of time on the fitted rows) and predicts every row.
PowerFit fit_power_trace(const std::vector<PowerTraceRow>& rows, const PowerSpec& device);

}  // namespace burst::cost
