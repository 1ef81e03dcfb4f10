#include "cost_commands.h"

#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/cost/power_fit.h"
#include "burst/cost/device_models.h"
#include "burst/cost/memory.h"
#include "burst/graph/model_json.h"
#include "burst/util/error.h"
#include "burst/util/format.h"
#include "burst/util/table.h"
#include "model_option.h"

namespace burst::cli {
namespace {

using nlohmann::json;
using Align = TextTable::Align;

struct DeviceOptions {
  std::string device;
  std::string profile;
  std::optional<std::string> profile_path() const {
    return profile.empty() ? std::nullopt : std::optional<std::string>(profile);
  }
};

void add_device_options(CLI::App* command, DeviceOptions& options) {
  command->add_option("--device", options.device,
                      "Device kind: v100, a100, a100-80gb, h100-sxm, h200 (cpu needs --profile)");
  command->add_option("--profile", options.profile, "Measured profile (burst profile -o FILE)");
}

json curve_json(const cost::EfficiencyCurve& curve) {
  return {{"eff_max", curve.eff_max}, {"x_half", curve.x_half}, {"scale", cost::scale_name(curve.scale)},
          {"backward_ratio", curve.backward_ratio}};
}

// {"classes": {conv: curve, ...}, "ops": {conv2d: curve, ...}}
json curves_json(const cost::DeviceSpec& spec) {
  json classes = json::object();
  for (int c = 0; c < cost::kOpClassCount; ++c) {
    classes[cost::op_class_name(static_cast<cost::OpClass>(c))] = curve_json(spec.curves[c]);
  }
  json ops = json::object();
  for (const auto& [op, curve] : spec.op_curves) ops[op] = curve_json(curve);
  return {{"classes", classes}, {"ops", ops}};
}

json fit_json(const cost::FitError& fit) {
  json by_class = json::object();
  for (int c = 0; c < cost::kOpClassCount; ++c) {
    by_class[cost::op_class_name(static_cast<cost::OpClass>(c))] = {
        {"entries", fit.entries_by_class[c]}, {"median_relative_error", fit.median_by_class[c]}};
  }
  return {{"entries", fit.entries},
          {"median_relative_error", fit.median_relative},
          {"mean_relative_error", fit.mean_relative},
          {"by_class", by_class}};
}

json device_json(const cost::DeviceModel& model) {
  const auto& spec = model.spec;
  return {{"kind", spec.kind},
          {"description", spec.description},
          {"peak_tflops", spec.peak_flops / 1e12},
          {"memory_bandwidth_gb_s", spec.memory_bandwidth.bytes_per_second() / 1e9},
          {"memory_gb", spec.memory.value() / 1e9},
          {"overhead_us", spec.overhead.us()},
          {"curves", curves_json(spec)},
          {"fitted_on", model.fitted_on},
          {"fit", fit_json(model.fit_error)},
          {"measured_entries", model.profile ? model.profile->entries.size() : 0}};
}

std::string fit_summary(const cost::FitError& fit) {
  return fmt::format("median {:.1f}% / mean {:.1f}% over {} entries (conv {:.1f}%, matmul {:.1f}%, "
                     "memory {:.1f}%)",
                     100 * fit.median_relative, 100 * fit.mean_relative, fit.entries,
                     100 * fit.median_by_class[0], 100 * fit.median_by_class[1],
                     100 * fit.median_by_class[2]);
}

void run_cost(const std::string& model_spec, const DeviceOptions& options, int64_t batch, bool as_json) {
  if (batch <= 0) throw UserError(fmt::format("--batch must be positive, got {}", batch));
  const graph::Graph graph = graph::load_model(model_spec);
  const cost::DeviceModel device = cost::resolve_device(options.device, options.profile_path());
  const auto model = cost::make_cost_model(device);
  json layers = json::array();
  TextTable table({{"id", Align::Right}, {"name", Align::Left}, {"op", Align::Left},
                   {"forward ms", Align::Right}, {"backward ms", Align::Right},
                   {"source", Align::Left}, {"weights", Align::Right}, {"activations", Align::Right}});
  Seconds forward, backward;
  Bytes weights, activations;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    const cost::LayerEstimate estimate = model->require(graph, id, batch);
    const cost::LayerMemory memory = cost::layer_memory(graph, id, batch);
    forward += estimate.time.forward;
    backward += estimate.time.backward;
    weights += memory.weights;
    activations += memory.activations;
    const auto& layer = graph.layer(id);
    layers.push_back({{"id", id}, {"name", layer.name}, {"op", graph::op_name(layer.op())},
                      {"forward_ms", estimate.time.forward.ms()},
                      {"backward_ms", estimate.time.backward.ms()},
                      {"source", cost::cost_source_name(estimate.source)},
                      {"weight_bytes", memory.weights.value()},
                      {"activation_bytes", memory.activations.value()}});
    table.add_row({std::to_string(id), layer.name, graph::op_name(layer.op()),
                   fmt::format("{:.4f}", estimate.time.forward.ms()),
                   fmt::format("{:.4f}", estimate.time.backward.ms()),
                   cost::cost_source_name(estimate.source), bytes_compact(memory.weights.value()),
                   bytes_compact(memory.activations.value())});
  }
  if (as_json) {
    std::cout << json{{"model", graph.name()},
                      {"batch", batch},
                      {"device", device_json(device)},
                      {"layers", layers},
                      {"totals",
                       {{"forward_ms", forward.ms()},
                        {"backward_ms", backward.ms()},
                        {"iteration_ms", (forward + backward).ms()},
                        {"weight_bytes", weights.value()},
                        {"activation_bytes", activations.value()}}}}
                     .dump(2)
              << '\n';
    return;
  }
  table.add_rule();
  table.add_row({"", "total", "", fmt::format("{:.4f}", forward.ms()), fmt::format("{:.4f}", backward.ms()),
                 "", bytes_compact(weights.value()), bytes_compact(activations.value())});
  std::cout << fmt::format("model {} on one {} at per-device batch {}: {:.3f} ms per iteration "
                           "(forward {:.3f} + backward {:.3f})\n",
                           graph.name(), device.spec.kind, batch, (forward + backward).ms(),
                           forward.ms(), backward.ms());
  std::cout << fmt::format("analytic model fitted on {}: {}\n\n", device.fitted_on,
                           fit_summary(device.fit_error));
  table.print(std::cout);
}

void run_devices(const DeviceOptions& options, bool as_json) {
  std::vector<cost::DeviceModel> devices;
  if (options.profile_path() || !options.device.empty()) {
    devices.push_back(cost::resolve_device(options.device, options.profile_path()));
  } else {
    // One fit of the measured A100 serves every GPU that borrows its curves.
    const cost::DeviceModel a100 = cost::resolve_device("a100", std::nullopt);
    for (const auto& kind : cost::catalog_kinds()) {
      if (kind == "a100") {
        devices.push_back(a100);
      } else if (kind != "cpu") {
        devices.push_back(cost::borrow_curves(kind, a100));
      }
    }
  }
  if (as_json) {
    json list = json::array();
    for (const auto& device : devices) list.push_back(device_json(device));
    std::cout << list.dump(2) << '\n';
    return;
  }
  TextTable table({{"device", Align::Left}, {"TFLOP/s", Align::Right}, {"GB/s", Align::Right},
                   {"memory", Align::Right}, {"overhead", Align::Right},
                   {"conv eff_max/x_half", Align::Right}, {"matmul eff_max/x_half", Align::Right},
                   {"memory eff_max/x_half", Align::Right}, {"op curves", Align::Right},
                   {"measured", Align::Left}});
  for (const auto& device : devices) {
    const auto& spec = device.spec;
    std::vector<std::string> row = {spec.kind, fmt::format("{:.1f}", spec.peak_flops / 1e12),
                                    fmt::format("{:.0f}", spec.memory_bandwidth.bytes_per_second() / 1e9),
                                    fmt::format("{:.0f} GB", spec.memory.value() / 1e9),
                                    fmt::format("{:.1f} us", spec.overhead.us())};
    for (const auto& curve : spec.curves) {
      row.push_back(fmt::format("{:.3f}/{:.3g} {}", curve.eff_max, curve.x_half, cost::scale_name(curve.scale)));
    }
    row.push_back(std::to_string(spec.op_curves.size()));
    row.push_back(device.profile ? fmt::format("{} entries", device.profile->entries.size()) : "no (analytic)");
    table.add_row(row);
  }
  table.print(std::cout);
  std::cout << "\n";
  for (const auto& device : devices) {
    std::cout << fmt::format("{}: {}; curves fitted on the {}: {}\n", device.spec.kind,
                             device.spec.description, device.fitted_on, fit_summary(device.fit_error));
  }
}

std::vector<int64_t> parse_batches(const std::vector<int64_t>& batches, const char* flag) {
  if (batches.empty()) throw UserError(fmt::format("{} needs at least one batch size", flag));
  for (const int64_t b : batches) {
    if (b <= 0) throw UserError(fmt::format("{}: batch sizes must be positive, got {}", flag, b));
  }
  return batches;
}

void run_fit(const std::string& profile_path, const std::vector<int64_t>& fit_batches,
             const std::vector<int64_t>& eval_batches, bool as_json) {
  const cost::Profile profile = cost::load_profile_file(profile_path);
  const cost::Profile fit_on = cost::filter_batches(profile, parse_batches(fit_batches, "--fit-batches"));
  const cost::Profile held_out = cost::filter_batches(profile, parse_batches(eval_batches, "--eval-batches"));
  if (fit_on.entries.empty() || held_out.entries.empty()) {
    throw UserError(fmt::format("profile '{}' has no entries at the {} batches", profile_path,
                                fit_on.entries.empty() ? "--fit-batches" : "--eval-batches"));
  }
  const cost::DeviceSpec base = cost::catalog_device(profile.device);
  const cost::DeviceSpec fitted = cost::fit_device(base, fit_on);
  const cost::FitError on_fit = cost::evaluate_fit(fitted, fit_on);
  const cost::FitError on_held_out = cost::evaluate_fit(fitted, held_out);
  if (as_json) {
    std::cout << json{{"profile", profile_path},
                      {"device", profile.device},
                      {"fit_batches", fit_batches},
                      {"eval_batches", eval_batches},
                      {"curves", curves_json(fitted)},
                      {"peak_tflops", fitted.peak_flops / 1e12},
                      {"memory_bandwidth_gb_s", fitted.memory_bandwidth.bytes_per_second() / 1e9},
                      {"overhead_us", fitted.overhead.us()},
                      {"fit", fit_json(on_fit)},
                      {"held_out", fit_json(on_held_out)}}
                     .dump(2)
              << '\n';
    return;
  }
  std::cout << fmt::format("{} ({}): fitted on batches {} -> {} entries\n", profile_path, profile.device,
                           fmt::join(fit_batches, ","), fit_on.entries.size());
  std::cout << fmt::format("  error on the fitted batches:    {}\n", fit_summary(on_fit));
  std::cout << fmt::format("  error on held-out batches {}: {}\n", fmt::join(eval_batches, ","),
                           fit_summary(on_held_out));
}

}  // namespace

// The power model's fit to the Zeus power-limit traces in `directory`
// (summary_power_{v100,a40,p100,rtx6000}.csv): constants per GPU and the error on held-out rows.
void run_power_fit(const std::string& directory, bool as_json) {
  nlohmann::json document = nlohmann::json::array();
  if (!as_json) {
    std::cout << fmt::format("{:<8} {:>6} {:>6} {:>9} {:>9} {:>8}  {}\n", "gpu", "gamma", "u", "held out", "time err",
                             "power err", "compute-bound share c per network");
  }
  for (const std::string kind : {"v100", "a40", "p100", "rtx6000"}) {
    const auto rows = cost::load_power_trace(fmt::format("{}/summary_power_{}.csv", directory, kind));
    const cost::PowerFit fit = cost::fit_power_trace(rows, cost::power_trace_device(kind));
    std::string shares;
    for (const auto& [network, share] : fit.compute_bound) shares += fmt::format("{}{} {:.2f}", shares.empty() ? "" : ", ", network, share);
    if (as_json) {
      nlohmann::json table = nlohmann::json::array();
      for (const cost::PowerFitRow& row : fit.rows) {
        table.push_back({{"network", row.row.network}, {"batch", row.row.batch}, {"optimizer", row.row.optimizer},
                         {"limit_w", row.row.limit_w}, {"fitted", row.fitted}, {"time_s", row.row.time_s},
                         {"predicted_time_s", row.predicted_time_s}, {"power_w", row.row.power_w},
                         {"predicted_power_w", row.predicted_power_w}});
      }
      document.push_back({{"gpu", kind}, {"clock_exponent", fit.device.clock_exponent},
                          {"clock_independent_share", fit.device.clock_independent_share},
                          {"compute_bound", fit.compute_bound}, {"held_out", fit.held_out},
                          {"held_out_median_time_error", fit.held_out_median_time_error},
                          {"held_out_median_power_error", fit.held_out_median_power_error}, {"rows", std::move(table)}});
      continue;
    }
    std::cout << fmt::format("{:<8} {:>6.2f} {:>6.2f} {:>9} {:>8.1f}% {:>8.1f}%  {}\n", kind, fit.device.clock_exponent,
                             fit.device.clock_independent_share, fit.held_out, 100 * fit.held_out_median_time_error,
                             100 * fit.held_out_median_power_error, shares);
  }
  if (as_json) std::cout << document.dump(2) << '\n';
}

void add_cost_commands(CLI::App& app) {
  struct Options {
    std::string model;
    DeviceOptions device;
    int64_t batch = 1;
    bool json = false;
    std::string profile;
    std::vector<int64_t> fit_batches = {1, 4, 16};
    std::vector<int64_t> eval_batches = {2, 8, 32};
  };
  auto options = std::make_shared<Options>();

  CLI::App* cost = app.add_subcommand("cost", "Predicted per-layer times and memory of a model on one device");
  add_model_option(*cost, options->model)->required();
  add_device_options(cost, options->device);
  cost->add_option("--batch", options->batch, "Per-device batch (default 1)");
  cost->add_flag("--json", options->json, "Print JSON instead of a table");
  cost->callback([options] { run_cost(options->model, options->device, options->batch, options->json); });

  CLI::App* devices = app.add_subcommand("devices", "The device catalog: peaks, fitted efficiency curves, fit error");
  add_device_options(devices, options->device);
  devices->add_flag("--json", options->json, "Print JSON instead of a table");
  devices->callback([options] { run_devices(options->device, options->json); });

  CLI::App* fit = app.add_subcommand("fit", "Fit the analytic model on some batches of a profile, test it on others");
  fit->add_option("--profile", options->profile, "Measured profile")->required();
  fit->add_option("--fit-batches", options->fit_batches, "Batches to fit on (default 1,4,16)")->delimiter(',');
  fit->add_option("--eval-batches", options->eval_batches, "Held-out batches (default 2,8,32)")->delimiter(',');
  fit->add_flag("--json", options->json, "Print JSON instead of text");
  fit->callback([options] { run_fit(options->profile, options->fit_batches, options->eval_batches, options->json); });

  CLI::App* power_fit = app.add_subcommand(
      "power-fit", "Fit the power model's clock constants to the Zeus power-limit traces; error on held-out rows");
  power_fit->add_option("directory", options->profile, "Folder of summary_power_*.csv (data/zeus-power-traces)")
      ->required();
  power_fit->add_flag("--json", options->json, "Print JSON (every row, measured and predicted) instead of a table");
  power_fit->callback([options] { run_power_fit(options->profile, options->json); });
}

}  // namespace burst::cli
