#include "burst/cluster_sim/application_tables.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "burst/util/csv.h"
#include "burst/util/error.h"

namespace burst::cluster_sim {
namespace {

// The published simulator's settings of its six applications (its applications.py): epochs
// to complete, and yolov3's largest local batch (larger ones accumulate gradients).
struct KnownApplication {
  const char* name;
  int max_epochs;
  double max_local_batch;  // 0: the largest measured
};
// Bounds on what a table may hold, so that no input can overflow the simulation's arithmetic.
constexpr double kMaxTableBatch = 1e9;
constexpr double kMaxStep_s = 1e6;
constexpr double kMaxProgress = 1e15;

constexpr KnownApplication kKnown[] = {{"bert", 2, 0},         {"cifar10", 100, 0},   {"ncf", 10, 0},
                                       {"imagenet", 90, 0},    {"deepspeech2", 80, 0}, {"yolov3", 50, 8}};

double lerp(double x0, double x1, double y0, double y1, double x) {
  return x1 == x0 ? y0 : y0 + (y1 - y0) * (x - x0) / (x1 - x0);
}

StepTime mix(const StepTime& a, const StepTime& b, double weight_b) {
  return {a.step_s + (b.step_s - a.step_s) * weight_b, a.sync_s + (b.sync_s - a.sync_s) * weight_b};
}

std::vector<int> normalised(const std::vector<int>& placement) {
  std::vector<int> best;
  for (size_t shift = 0; shift < placement.size(); ++shift) {
    std::vector<int> rotated(placement.begin() + static_cast<std::ptrdiff_t>(shift), placement.end());
    rotated.insert(rotated.end(), placement.begin(), placement.begin() + static_cast<std::ptrdiff_t>(shift));
    if (best.empty() || rotated < best) best = rotated;
  }
  return best;
}

// Accumulates (batch, time) points into curves, averaging repeated batches.
struct CurveBuilder {
  std::map<double, std::pair<StepTime, int>> sums;
  void add(double batch, StepTime time) {
    auto& [sum, count] = sums[batch];
    sum.step_s += time.step_s;
    sum.sync_s += time.sync_s;
    ++count;
  }
  StepCurve build() const {
    StepCurve curve;
    for (const auto& [batch, entry] : sums) {
      curve.local_batch.push_back(batch);
      curve.times.push_back({entry.first.step_s / entry.second, entry.first.sync_s / entry.second});
    }
    return curve;
  }
};

std::vector<int> placement_digits(const CsvTable& table, const CsvRow& row, size_t column) {
  const std::string& text = row.fields[column];
  std::vector<int> digits;
  for (const char c : text) {
    if (c < '1' || c > '9') {
      throw UserError(fmt::format("{}: placement must be digits 1-9 (GPUs on each node), got '{}'", table.where(row),
                                  text.substr(0, 40)));
    }
    digits.push_back(c - '0');
  }
  if (digits.empty()) throw UserError(fmt::format("{}: placement is empty", table.where(row)));
  return digits;
}

void read_placements(const CsvTable& table, ApplicationTable& app, std::map<int, std::map<int, CurveBuilder>>& spread) {
  const size_t placement = table.column("placement"), batch = table.column("local_bsz");
  const size_t step = table.column("step_time"), sync = table.column("sync_time");
  std::map<std::vector<int>, CurveBuilder> measured;
  for (const CsvRow& row : table.rows) {
    const std::vector<int> digits = placement_digits(table, row, placement);
    const double local = table.number(row, batch, 1, kMaxTableBatch);
    const StepTime time{table.number(row, step, 1e-12, kMaxStep_s), table.number(row, sync, 0, kMaxStep_s)};
    measured[normalised(digits)].add(local, time);
    int replicas = 0;
    for (const int d : digits) replicas += d;
    spread[static_cast<int>(digits.size())][replicas].add(local, time);
    app.min_local_batch = app.min_local_batch == 0 ? local : std::min(app.min_local_batch, local);
    app.max_local_batch = std::max(app.max_local_batch, local);
  }
  if (table.rows.empty()) throw UserError(fmt::format("{}: no measurements", table.source));
  for (const auto& [key, builder] : measured) app.measured[key] = builder.build();
}

void read_scalability(const CsvTable& table, std::map<int, std::map<int, CurveBuilder>>& spread) {
  const size_t nodes = table.column("num_nodes"), replicas = table.column("num_replicas");
  const size_t batch = table.column("local_bsz"), step = table.column("step_time"), sync = table.column("sync_time");
  for (const CsvRow& row : table.rows) {
    const auto node_count = static_cast<int>(table.whole(row, nodes, 1, 1 << 20));
    const auto replica_count = static_cast<int>(table.whole(row, replicas, node_count, 1 << 20));
    spread[node_count][replica_count].add(table.number(row, batch, 1, kMaxTableBatch),
                                          {table.number(row, step, 1e-12, kMaxStep_s), table.number(row, sync, 0, kMaxStep_s)});
  }
}

std::vector<ValidationEpoch> read_validation(const CsvTable& table) {
  const size_t progress = table.column("progress"), iteration = table.column("iteration");
  const size_t sqr = table.column("grad_sqr"), var = table.column("grad_var");
  std::vector<ValidationEpoch> epochs;
  for (const CsvRow& row : table.rows) {
    epochs.push_back({table.number(row, progress, 0, kMaxProgress), table.number(row, iteration, 0, kMaxProgress),
                      table.number(row, sqr, 0, 1e300), table.number(row, var, 0, 1e300)});
  }
  if (epochs.empty()) throw UserError(fmt::format("{}: no epochs", table.source));
  return epochs;
}

void settle(ApplicationTable& app, const std::string& where) {
  if (app.validation.empty()) throw UserError(fmt::format("{}: no validation-<batch>.csv", where));
  app.init_batch = app.validation.begin()->first;
  app.max_batch = app.validation.rbegin()->first;
  size_t rows = SIZE_MAX;
  for (const auto& [batch, epochs] : app.validation) rows = std::min(rows, epochs.size());
  app.max_epochs = static_cast<int>(rows);
  for (const KnownApplication& known : kKnown) {
    if (app.name != known.name) continue;
    app.max_epochs = std::min(app.max_epochs, known.max_epochs);
    if (known.max_local_batch > 0) app.max_local_batch = known.max_local_batch;
  }
  app.epoch_end.assign(static_cast<size_t>(app.max_epochs) + 1, 0.0);
  for (int e = 1; e <= app.max_epochs; ++e) {
    double least = INFINITY;
    for (const auto& [batch, epochs] : app.validation) least = std::min(least, epochs[static_cast<size_t>(e - 1)].progress);
    app.epoch_end[static_cast<size_t>(e)] = std::max(least, app.epoch_end[static_cast<size_t>(e - 1)]);
  }
}

// Step time of a row (fixed node count) at `per_node` GPUs per node: linear between its
// measured replica counts (as GPUs per node), constant beyond.
StepTime row_time(const std::map<int, StepCurve>& row, int nodes, double per_node, double batch) {
  auto above = row.begin();
  while (above != row.end() && static_cast<double>(above->first) / nodes < per_node) ++above;
  if (above == row.begin()) return above->second.at(batch);
  if (above == row.end()) return std::prev(above)->second.at(batch);
  const auto below = std::prev(above);
  const double x0 = static_cast<double>(below->first) / nodes, x1 = static_cast<double>(above->first) / nodes;
  return mix(below->second.at(batch), above->second.at(batch), (per_node - x0) / (x1 - x0));
}

}  // namespace

StepTime StepCurve::at(double batch) const {
  BURST_ASSERT(!local_batch.empty(), "an empty step curve");
  if (batch <= local_batch.front()) return times.front();
  if (batch >= local_batch.back()) return times.back();
  const size_t upper = static_cast<size_t>(std::upper_bound(local_batch.begin(), local_batch.end(), batch) -
                                           local_batch.begin());
  const double weight = (batch - local_batch[upper - 1]) / (local_batch[upper] - local_batch[upper - 1]);
  return mix(times[upper - 1], times[upper], weight);
}

LocalBatch ApplicationTable::local_batch(int64_t global_batch, int replicas) const {
  const auto ceil_div = [](double a, double b) { return static_cast<int64_t>(std::ceil(a / b - 1e-8)); };
  const int64_t local = ceil_div(static_cast<double>(global_batch), replicas);
  LocalBatch split;
  split.accumulation = static_cast<int>(ceil_div(static_cast<double>(local), max_local_batch) - 1);
  if (replicas == 1 && global_batch > init_batch) split.accumulation = std::max(1, split.accumulation);
  split.accumulation = std::max(0, split.accumulation);
  split.micro_batch = ceil_div(static_cast<double>(local), split.accumulation + 1.0);
  const int64_t count = static_cast<int64_t>(replicas) * (split.accumulation + 1);
  split.micro_batch = std::max<int64_t>(1, std::min(split.micro_batch, max_batch / count));
  split.global_batch = count * split.micro_batch;
  return split;
}

StepTime ApplicationTable::step_time(const std::vector<int>& placement, double micro_batch) const {
  const auto found = measured.find(normalised(placement));
  if (found != measured.end()) return found->second.at(micro_batch);
  int replicas = 0;
  for (const int gpus : placement) replicas += gpus;
  const int nodes = std::min(static_cast<int>(placement.size()), 16);  // as the published simulator
  const double per_node = static_cast<double>(replicas) / static_cast<double>(placement.size());
  auto above = spread.lower_bound(nodes);
  if (above == spread.end()) --above;
  if (above->first == nodes || above == spread.begin()) return row_time(above->second, above->first, per_node, micro_batch);
  const auto below = std::prev(above);
  return mix(row_time(below->second, below->first, per_node, micro_batch),
             row_time(above->second, above->first, per_node, micro_batch),
             static_cast<double>(nodes - below->first) / (above->first - below->first));
}

std::pair<double, double> ApplicationTable::grad_stats(double batch, int epoch) const {
  batch = std::clamp(batch, static_cast<double>(init_batch), static_cast<double>(max_batch));
  auto upper = validation.lower_bound(static_cast<int64_t>(std::ceil(batch)));
  if (upper == validation.end()) --upper;
  auto lower = upper;
  if (static_cast<double>(upper->first) > batch && upper != validation.begin()) --lower;
  const auto e = static_cast<size_t>(epoch);
  const ValidationEpoch& a = lower->second.at(std::min(e, lower->second.size() - 1));
  const ValidationEpoch& b = upper->second.at(std::min(e, upper->second.size() - 1));
  const auto x0 = static_cast<double>(lower->first), x1 = static_cast<double>(upper->first);
  return {lerp(x0, x1, a.grad_sqr, b.grad_sqr, batch), lerp(x0, x1, a.grad_var, b.grad_var, batch)};
}

double ApplicationTable::gain(double batch, int epoch) const {
  const auto [sqr, var] = grad_stats(batch, epoch);
  const double scale = batch / static_cast<double>(init_batch);
  const double denominator = var / scale + sqr;
  return denominator > 0 ? (var + sqr) / denominator : scale;
}

ApplicationTables parse_application_tables(const std::map<std::string, std::string>& files, const std::string& base) {
  std::map<std::string, std::map<int, std::map<int, CurveBuilder>>> spreads;
  ApplicationTables apps;
  for (const auto& [relative, text] : files) {
    const size_t slash = relative.find('/');
    if (slash == std::string::npos) continue;
    const std::string name = relative.substr(0, slash), file = relative.substr(slash + 1);
    const std::string source = base + "/" + relative;
    ApplicationTable& app = apps[name];
    app.name = name;
    if (file == "placements.csv") {
      read_placements(parse_csv(text, source), app, spreads[name]);
    } else if (file == "scalability.csv") {
      read_scalability(parse_csv(text, source), spreads[name]);
    } else if (file.rfind("validation-", 0) == 0 && file.size() > 15) {
      const std::string digits = file.substr(11, file.size() - 15);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 12) continue;
      app.validation[std::stoll(digits)] = read_validation(parse_csv(text, source));
    }
  }
  for (auto& [name, app] : apps) {
    if (app.measured.empty()) throw UserError(fmt::format("{}/{}: no placements.csv", base, name));
    settle(app, base + "/" + name);
    for (const auto& [nodes, row] : spreads[name]) {
      for (const auto& [replicas, builder] : row) app.spread[nodes][replicas] = builder.build();
    }
  }
  if (apps.empty()) throw UserError(fmt::format("{}: no applications (folders with placements.csv)", base));
  return apps;
}

ApplicationTables read_application_tables(const std::string& directory) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(directory, error)) throw UserError(fmt::format("'{}' is not a folder", directory));
  std::map<std::string, std::string> files;
  for (const auto& folder : fs::directory_iterator(directory, error)) {
    if (!folder.is_directory() || !fs::exists(folder.path() / "placements.csv")) continue;
    for (const auto& entry : fs::directory_iterator(folder.path(), error)) {
      if (entry.path().extension() != ".csv") continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      files[folder.path().filename().string() + "/" + entry.path().filename().string()] = text.str();
    }
  }
  return parse_application_tables(files, directory);
}

}  // namespace burst::cluster_sim
