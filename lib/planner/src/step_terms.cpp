// Step terms and unchecked dimensions (step_terms.h).
#include "burst/planner/step_terms.h"

#include <algorithm>

#include <fmt/format.h>

#include "burst/cost/network.h"
#include "burst/timing/evaluate.h"

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

}  // namespace

StepTerms step_terms(const plan::Plan& plan, const plan::PlanContext& context, const program::ProgramOptions& program,
                     const timing::PlanEvaluation& evaluated) {
  timing::EvaluateOptions options;
  options.program = program;
  const cost::NetworkModel free(free_links(context.network.cluster()));
  const plan::PlanContext without_links{context.graph, context.cost, free, context.kind_costs, context.kind_power};
  StepTerms terms;
  terms.iteration = evaluated.iteration_time.s();
  terms.compute = evaluated.busiest_compute.s();
  terms.recompute = evaluated.busiest_recompute.s();
  const double linked_free = timing::evaluate_plan(plan, without_links, options).iteration_time.s();
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
