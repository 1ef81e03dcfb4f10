#include "cluster_sim_commands.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "burst/cluster/cluster.h"
#include "burst/cluster_sim/multi_tenant.h"
#include "burst/util/error.h"
#include "cluster_sim_report.h"
#include "command_inputs.h"
#include "planned_jobs.h"

namespace burst::cli {
namespace {

struct ClusterSimOptions {
  std::string trace;
  std::string policies = "tiresias";
  std::string applications;   // --applications DIR: the measured tables there
  std::string job_model;      // measured or burst; default: measured with --applications, else burst
  std::string cluster_file;
  std::string device = "v100";
  std::string devices = "64";
  std::string gpus_per_node = "4";
  std::string interval = "60";
  std::string restart = "30";
  std::string from_day = "0";
  std::string days = "0";
  std::string slowdown = "1.05";
  bool skip_oversized = false;
  bool json = false;
  bool with_jobs = false;
  std::string svg;
  std::string events;
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw UserError(fmt::format("cannot write '{}'", path));
}

void write_outputs(const ClusterSimOptions& options, const ClusterSimSetting& setting,
                   const std::vector<cluster_sim::MultiTenantResult>& results) {
  if (!options.svg.empty()) write_file(options.svg, cluster_sim_svg(setting, results));
  if (!options.events.empty()) write_file(options.events, cluster_sim_events_csv(results));
  if (options.json) {
    std::cout << cluster_sim_json(setting, results, options.with_jobs).dump(2) << '\n';
  } else {
    std::cout << cluster_sim_text(setting, results);
  }
}

// The cluster's nodes: a cluster file's (its groups' kinds), or the built-in one: --devices N
// of --device, or --devices KIND:N,KIND:N,..., packed --gpus-per-node per node.
cluster_sim::ClusterNodes cluster_nodes(const ClusterSimOptions& options) {
  cluster_sim::ClusterNodes nodes;
  if (!options.cluster_file.empty()) {
    const cluster::Cluster cluster = cluster::load_cluster_file(options.cluster_file);
    nodes.kind_names = cluster.kinds();
    for (int rank = 0; rank < cluster.size(); ++rank) {
      const auto node = static_cast<size_t>(cluster.node_of(rank));
      if (node >= nodes.gpus.size()) {
        nodes.gpus.push_back(0);
        nodes.kinds.push_back(cluster.kind_index(rank));
      }
      ++nodes.gpus[node];
    }
    return nodes;
  }
  const bool listed = options.devices.find(':') != std::string::npos;
  const cluster::Cluster cluster =
      listed ? cluster::builtin_mixed_cluster(options.devices, "")
             : cluster::builtin_cluster(options.device, parse_whole(options.devices, "--devices", 1, cluster::kMaxDevices));
  const int64_t per_node = parse_whole(options.gpus_per_node, "--gpus-per-node", 1, 1024);
  nodes.kind_names = cluster.kinds();
  for (const cluster::DeviceGroup& group : cluster.groups()) {
    const auto kind = static_cast<int>(std::find(nodes.kind_names.begin(), nodes.kind_names.end(), group.device) -
                                       nodes.kind_names.begin());
    for (int64_t left = *group.devices; left > 0; left -= per_node) {
      nodes.gpus.push_back(static_cast<int>(std::min(left, per_node)));
      nodes.kinds.push_back(kind);
    }
  }
  return nodes;
}

std::string kinds_text(const cluster_sim::ClusterNodes& nodes) {
  std::string text;
  for (const std::string& kind : nodes.kind_names) text += (text.empty() ? "" : "+") + kind;
  return text;
}

std::vector<cluster_sim::ClusterPolicy> parse_policies(const std::string& text) {
  std::vector<cluster_sim::ClusterPolicy> policies;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    policies.push_back(cluster_sim::parse_cluster_policy(text.substr(start, comma == std::string::npos ? comma : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return policies;
}

cluster_sim::MultiTenantOptions tenant_options(const ClusterSimOptions& options) {
  cluster_sim::MultiTenantOptions tenant;
  tenant.interval_s = parse_finite(options.interval, "--interval", 1e-3, "a time > 0 in seconds");
  tenant.restart_s = parse_finite(options.restart, "--restart", 0, "a time >= 0 in seconds");
  tenant.foreground_slowdown = parse_finite(options.slowdown, "--slowdown", 1, "a factor >= 1");
  tenant.skip_oversized = options.skip_oversized;
  tenant.record_events = !options.events.empty();
  return tenant;
}

void run_cluster_sim(const ClusterSimOptions& options) {
  const std::vector<cluster_sim::ClusterPolicy> policies = parse_policies(options.policies);
  cluster_sim::MultiTenantOptions tenant = tenant_options(options);
  const cluster_sim::ClusterNodes nodes = cluster_nodes(options);
  const std::string job_model = options.job_model.empty() ? (options.applications.empty() ? "burst" : "measured")
                                                          : options.job_model;
  if (job_model != "measured" && job_model != "burst") {
    throw UserError(fmt::format("--job-model must be measured or burst, got '{}'", options.job_model));
  }
  cluster_sim::TraceWindow window;
  window.from_day = parse_finite(options.from_day, "--from-day", 0, "a number of days >= 0");
  window.days = parse_finite(options.days, "--days", 0, "a number of days >= 0 (0: to the end)");
  const cluster_sim::JobTrace trace = cluster_sim::read_job_trace(options.trace, window);
  const std::optional<cluster_sim::ApplicationTables> read_tables =
      options.applications.empty() ? std::nullopt
                                   : std::optional<cluster_sim::ApplicationTables>(cluster_sim::read_application_tables(options.applications));
  const cluster_sim::ApplicationTables& tables = read_tables ? *read_tables : cluster_sim::builtin_application_tables();

  cluster_sim::MeasuredTimer measured;
  PlannedTimer planned(nodes.kind_names);
  cluster_sim::IterationTimer& timer = job_model == "measured" ? static_cast<cluster_sim::IterationTimer&>(measured) : planned;
  const int most_per_node = *std::max_element(nodes.gpus.begin(), nodes.gpus.end());
  const cluster_sim::JobModel model(tables, timer, most_per_node);
  if (job_model == "burst") {
    for (const cluster_sim::TraceJob& job : trace.jobs) {  // before any planning: every application has a model
      model.check(trace, job);
      try {
        burst_model_of(job.application);
      } catch (const UserError& error) {
        throw UserError(fmt::format("{}: {}", trace.where(job), error.what()));
      }
    }
  }
  std::vector<cluster_sim::MultiTenantResult> results;
  for (const cluster_sim::ClusterPolicy policy : policies) {
    tenant.policy = policy;
    const auto started = std::chrono::steady_clock::now();
    tenant.progress = [&, started](double simulated_s, size_t done, size_t total) {
      if (std::chrono::steady_clock::now() - started < std::chrono::seconds(2)) return;  // quick runs stay quiet
      std::cerr << fmt::format("cluster-sim {}: {}/{} jobs done, simulated {:.1f} h\n", cluster_sim::cluster_policy_name(policy),
                               done, total, simulated_s / 3600);
    };
    results.push_back(cluster_sim::simulate_multi_tenant(trace, model, nodes, tenant));
  }
  const ClusterSimSetting setting{options.trace, trace.format, trace.jobs.size(), nodes.total(),
                                  static_cast<int>(nodes.gpus.size()), most_per_node,
                                  job_model == "measured" ? "GPUs of the measured tables" : kinds_text(nodes),
                                  job_model, tenant.interval_s, tenant.restart_s};
  write_outputs(options, setting, results);
}

}  // namespace

void add_cluster_sim_commands(CLI::App& app) {
  auto options = std::make_shared<ClusterSimOptions>();
  CLI::App* command = app.add_subcommand(
      "cluster-sim", "Replay a job trace (Pollux workload or Philly format) on a multi-tenant cluster under "
                     "scheduling policies");
  command->add_option("--trace", options->trace, "Job trace: a Pollux workload CSV or the Philly CSV")->required();
  command->add_option("--policy", options->policies,
                      "Policies, comma-separated: fifo, tiresias, burst-scale, burst-multiplex, burst (default tiresias)");
  command->add_option("--applications", options->applications,
                      "Measured applications folder (laid out as data/pollux-traces/applications): selects the "
                      "measured-table job model; default: the built-in copy");
  command->add_option("--job-model", options->job_model,
                      "measured (the tables' step times) or burst (burst's planner and evaluator); default: measured "
                      "with --applications, else burst");
  CLI::Option* file = command->add_option("--cluster", options->cluster_file, "Cluster file (docs/cluster-format.md)");
  command->add_option("--device", options->device, "Built-in device kind (default v100)")->excludes(file);
  command->add_option("--devices", options->devices,
                      "GPUs of the built-in cluster (default 64), or several kinds as KIND:N,KIND:N,... (v100:32,a100:32)")
      ->excludes(file);
  command->add_option("--gpus-per-node", options->gpus_per_node, "GPUs per node of the built-in cluster (default 4)")
      ->excludes(file);
  command->add_option("--interval", options->interval, "Scheduling round, seconds (default 60)");
  command->add_option("--restart", options->restart, "Checkpoint-and-restart time of a start or resize, s (default 30)");
  command->add_option("--slowdown", options->slowdown,
                      "Multiplexing where the job model does not simulate it (measured tables, hosts across kinds): a "
                      "host job's slowdown with a background job on its devices (default 1.05)");
  command->add_option("--from-day", options->from_day, "Philly: start the replay this many days into the trace");
  command->add_option("--days", options->days, "Philly: replay this many days (default 0: to the end)");
  command->add_flag("--skip-oversized", options->skip_oversized,
                    "Leave out jobs asking for more GPUs than the cluster has (default: refuse the trace)");
  command->add_flag("--json", options->json, "Print JSON instead of a table");
  command->add_flag("--jobs", options->with_jobs, "With --json: every job's outcome too");
  command->add_option("--svg", options->svg, "Write the JCT distributions and GPUs held over time as SVG");
  command->add_option("--events", options->events,
                      "Write every policy's events (arrival, start, resize, preempt, background, finish) as CSV");
  command->callback([options] { run_cluster_sim(*options); });
}

}  // namespace burst::cli
