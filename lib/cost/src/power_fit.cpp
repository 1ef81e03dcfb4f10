#include "burst/cost/power_fit.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "burst/util/csv.h"
#include "burst/util/error.h"

namespace burst::cost {
namespace {

using GroupKey = std::tuple<std::string, int64_t, std::string>;
GroupKey group_of(const PowerTraceRow& row) { return {row.network, row.batch, row.optimizer}; }

struct Group {
  std::vector<size_t> rows;  // indices into the rows, any order
  size_t anchor = 0;         // the row at the highest limit
  bool fitting = false;      // one of the groups the fit uses (every other batch size)
};

// Predicted (time, power) of `row` from its group's anchor.
std::pair<double, double> predict(const PowerSpec& device, const PowerTraceRow& anchor, const PowerTraceRow& row,
                                  double compute_bound) {
  if (row.limit_w >= anchor.power_w) return {anchor.time_s, anchor.power_w};
  PowerSpec workload = device;
  workload.memory_bound_share = 1;  // the anchor's power is the workload's busy power at the maximum clock
  workload.max_w = anchor.power_w;
  const double ratio = highest_clock_under_cap(workload, 1.0, row.limit_w);
  return {clocked_time(anchor.time_s, compute_bound, ratio), compute_power_w(workload, 1.0, ratio)};
}

double log_error(double predicted, double measured) {
  const double error = std::log(predicted / measured);
  return error * error;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

std::map<GroupKey, Group> groups_of(const std::vector<PowerTraceRow>& rows) {
  std::map<GroupKey, Group> groups;
  std::map<std::string, std::set<int64_t>> batches;  // per network
  for (size_t i = 0; i < rows.size(); ++i) {
    Group& group = groups[group_of(rows[i])];
    if (group.rows.empty() || rows[i].limit_w > rows[group.anchor].limit_w) group.anchor = i;
    group.rows.push_back(i);
    batches[rows[i].network].insert(rows[i].batch);
  }
  // Every other batch size of each network, smallest first, fits (one optimizer's group each).
  std::set<std::pair<std::string, int64_t>> taken;
  for (auto& [key, group] : groups) {
    const auto& [network, batch, optimizer] = key;
    const std::set<int64_t>& sizes = batches[network];
    const auto position = std::distance(sizes.begin(), sizes.find(batch));
    if (position % 2 == 0 && taken.emplace(network, batch).second) group.fitting = true;
  }
  return groups;
}

// Squared log error of time over the network's fitted rows at (gamma, u, c).
double network_error(const PowerSpec& device, const std::vector<PowerTraceRow>& rows,
                     const std::vector<const Group*>& groups, double compute_bound) {
  double error = 0;
  for (const Group* group : groups) {
    for (const size_t i : group->rows) {
      error += log_error(predict(device, rows[group->anchor], rows[i], compute_bound).first, rows[i].time_s);
    }
  }
  return error;
}

}  // namespace

double PowerFitRow::time_error() const { return std::abs(predicted_time_s - row.time_s) / row.time_s; }
double PowerFitRow::power_error() const { return std::abs(predicted_power_w - row.power_w) / row.power_w; }

std::vector<PowerTraceRow> load_power_trace(const std::string& path) {
  const CsvTable table = read_csv(path);
  const size_t dataset = table.column("dataset"), network = table.column("network");
  const size_t batch = table.column("batch_size"), optimizer = table.column("optimizer");
  const size_t limit = table.column("power_limit"), time = table.column("time_per_epoch");
  const size_t power = table.column("average_power");
  std::vector<PowerTraceRow> rows;
  for (const CsvRow& line : table.rows) {
    PowerTraceRow row;
    row.network = line.fields[dataset] + "/" + line.fields[network];
    row.batch = table.whole(line, batch, 1, int64_t{1} << 40);
    row.optimizer = line.fields[optimizer];
    row.limit_w = table.number(line, limit, 1e-9);
    row.time_s = table.number(line, time, 1e-9);
    row.power_w = table.number(line, power, 1e-9);
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw UserError(fmt::format("power trace '{}' has no rows", path));
  return rows;
}

PowerSpec power_trace_device(const std::string& kind) {
  PowerSpec spec;
  spec.kind = kind;
  // Board maxima and clock ranges from the datasheets; idle, a persistence-mode idle reading.
  if (kind == "v100") {
    spec.idle_w = 25, spec.max_w = 250, spec.min_clock_mhz = 135, spec.max_clock_mhz = 1380;  // V100 PCIe
  } else if (kind == "a40") {
    spec.idle_w = 30, spec.max_w = 300, spec.min_clock_mhz = 210, spec.max_clock_mhz = 1740;
  } else if (kind == "p100") {
    spec.idle_w = 25, spec.max_w = 250, spec.min_clock_mhz = 544, spec.max_clock_mhz = 1329;  // P100 PCIe
  } else if (kind == "rtx6000") {
    spec.idle_w = 15, spec.max_w = 260, spec.min_clock_mhz = 300, spec.max_clock_mhz = 1770;  // Quadro RTX 6000
  } else {
    throw UserError(fmt::format("no power trace device '{}' (known: v100, a40, p100, rtx6000)", kind));
  }
  spec.source = "Zeus power-limit trace device";
  return spec;
}

PowerFit fit_power_trace(const std::vector<PowerTraceRow>& rows, const PowerSpec& device) {
  const std::map<GroupKey, Group> groups = groups_of(rows);
  std::map<std::string, std::vector<const Group*>> fitting;  // per network
  for (const auto& [key, group] : groups) {
    if (group.fitting) fitting[std::get<0>(key)].push_back(&group);
  }
  PowerFit best;
  double best_error = INFINITY;
  PowerSpec candidate = device;
  for (double gamma = 1.0; gamma <= 6.0 + 1e-9; gamma += 0.1) {
    for (double share = 0.0; share <= 0.9 + 1e-9; share += 0.02) {
      candidate.clock_exponent = gamma;
      candidate.clock_independent_share = share;
      double error = 0;
      std::map<std::string, double> bounds;
      for (const auto& [network, network_groups] : fitting) {
        double network_best = INFINITY;
        for (double c = 0.0; c <= 1.0 + 1e-9; c += 0.02) {
          const double e = network_error(candidate, rows, network_groups, c);
          if (e < network_best) network_best = e, bounds[network] = c;
        }
        error += network_best;
      }
      if (error < best_error) best_error = error, best.device = candidate, best.compute_bound = bounds;
    }
  }
  std::vector<double> time_errors, power_errors;
  for (const auto& [key, group] : groups) {
    for (const size_t i : group.rows) {
      PowerFitRow fit_row;
      fit_row.row = rows[i];
      fit_row.fitted = group.fitting || i == group.anchor;
      std::tie(fit_row.predicted_time_s, fit_row.predicted_power_w) =
          predict(best.device, rows[group.anchor], rows[i], best.compute_bound[std::get<0>(key)]);
      if (!fit_row.fitted) time_errors.push_back(fit_row.time_error()), power_errors.push_back(fit_row.power_error());
      best.rows.push_back(std::move(fit_row));
    }
  }
  best.held_out = static_cast<int>(time_errors.size());
  best.held_out_median_time_error = median(time_errors);
  best.held_out_median_power_error = median(power_errors);
  return best;
}

}  // namespace burst::cost
