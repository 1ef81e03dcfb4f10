// Step terms and unchecked dimensions (step_terms.h).
#include "burst/planner/step_terms.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "burst/cost/network.h"
#include "burst/timing/evaluate.h"
#include "burst/timing/task_timer.h"

namespace burst::planner {
namespace {

// The cluster with every link at the most bandwidth a link may have and no latency.
cluster::Cluster free_links(const cluster::Cluster& cluster) {
  const cluster::Link free{Bandwidth(cluster::kMaxBandwidthBytesPerSecond), Seconds(0)};
  cluster::MixedClusterSpec spec;
  spec.name = cluster.name();
  for (cluster::DeviceGroup group : cluster.groups()) {
    group.intra_node = free;
    group.inter_node = free;
    spec.groups.push_back(group);
  }
  if (cluster.between_groups()) spec.between_groups = free;
  return cluster::Cluster(spec);
}

// Per rank that stands for others: its compute and recompute seconds; the busiest's.
std::pair<double, double> busiest_compute(const timing::StepTasks& step) {
  std::map<int32_t, std::pair<double, double>> by_rank;
  for (const timing::Task& task : step.tasks) {
    if (task.kind != timing::TaskKind::Compute) continue;
    auto& [compute, recompute] = by_rank[task.rank];
    (task.work == timing::TaskWork::Recompute ? recompute : compute) += task.duration_s;
  }
  std::pair<double, double> busiest{0, 0};
  for (const auto& [rank, seconds] : by_rank) {
    if (seconds.first + seconds.second > busiest.first + busiest.second) busiest = seconds;
  }
  return busiest;
}

}  // namespace

StepTerms step_terms(const plan::Plan& plan, const plan::PlanContext& context, const program::ProgramOptions& program) {
  timing::EvaluateOptions options;
  options.program = program;
  const timing::EvaluationTasks tasks = timing::evaluation_tasks(plan, context, options);
  const cost::NetworkModel free(free_links(context.network.cluster()));
  const plan::PlanContext without_links{context.graph, context.cost, free, context.kind_costs, context.kind_power};
  StepTerms terms;
  terms.iteration = timing::evaluate_plan(plan, context, options).iteration_time.s();
  const double linked_free = timing::evaluate_plan(plan, without_links, options).iteration_time.s();
  std::tie(terms.compute, terms.recompute) = busiest_compute(tasks.step);
  terms.communication = std::max(0.0, terms.iteration - linked_free);
  terms.bubble = std::max(0.0, linked_free - terms.compute - terms.recompute);
  return terms;
}

std::vector<std::string> unchecked_dimensions(const PlanDimensions& d) {
  std::vector<std::string> unchecked;
  if (d.schedule == plan::Schedule::ZeroBubbleH1) unchecked.emplace_back("ZB-H1: no published run checks it");
  if (d.tensor > 8) unchecked.emplace_back(fmt::format("TP {}: the published runs' largest is 8", d.tensor));
  // Sharded data parallelism at scale predicts 1.4-3.2x faster than measured (docs/llm.md);
  // torchtitan's Table 3 (FSDP over 128 H100s) is the largest checked within 15%.
  constexpr int kLargestCheckedSharding = 128;
  const int sharded = d.data * d.context;
  if (d.zero_stage == 3 && sharded > kLargestCheckedSharding) {
    unchecked.emplace_back(fmt::format("ZeRO 3 over {} data-parallel ranks: the largest checked is {} (torchtitan "
                                       "Table 3)",
                                       sharded, kLargestCheckedSharding));
  }
  if (d.context > 8) unchecked.emplace_back(fmt::format("CP {}: the published runs' largest is 8", d.context));
  return unchecked;
}

}  // namespace burst::planner
