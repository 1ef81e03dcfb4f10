#include "burst/planner/gpu_count_sweep.h"

#include <algorithm>

#include <fmt/format.h>

#include "burst/cluster/cluster.h"
#include "burst/cost/network.h"
#include "burst/graph/language_model.h"
#include "burst/plan/plan_context.h"
#include "burst/util/error.h"

namespace burst::planner {

std::vector<int> gpu_sweep_counts(int devices) {
  std::vector<int> counts;
  for (int64_t n = 1; n < devices; n *= 2) counts.push_back(static_cast<int>(n));
  counts.push_back(devices);
  return counts;
}

namespace {

GpuCountPoint plan_count(const graph::Graph& graph, const cost::CostModel& cost, const std::string& kind, int devices,
                         int64_t global_batch, Strategy strategy, const AutoPlanOptions& options, double peak_flops) {
  GpuCountPoint point;
  point.devices = devices;
  const cost::NetworkModel network(cluster::builtin_cluster(kind, devices));
  const plan::PlanContext context{graph, cost, network, {}, plan::catalog_kind_power(network.cluster())};
  try {
    point.chosen = choose_plan(context, global_batch, strategy, options);
  } catch (const UserError& error) {
    point.why_not = error.what();
    return point;
  }
  timing::EvaluateOptions evaluate;
  evaluate.program = point.chosen->program;
  point.iteration = timing::evaluate_plan(point.chosen->plan, context, evaluate).iteration_time;
  const auto rate = timing::language_model_rate(graph, global_batch, point.iteration, devices, peak_flops);
  if (rate) point.rate = *rate;
  for (const program::DeviceMemory& rank : point.chosen->memory) {
    point.peak_memory = std::max(point.peak_memory, rank.use.total());
  }
  const double tokens_per_s = point.rate.tokens_per_s_per_device * devices;
  point.gpu_hours_per_billion_tokens = tokens_per_s > 0 ? devices * (1e9 / tokens_per_s) / 3600 : 0;
  return point;
}

}  // namespace

std::vector<GpuCountPoint> sweep_gpu_counts(const graph::Graph& graph, const cost::CostModel& cost,
                                            const std::string& kind, const std::vector<int>& counts,
                                            int64_t global_batch, Strategy strategy, const AutoPlanOptions& options,
                                            double peak_flops, const std::function<void(int)>& starting) {
  if (!graph::sequence_length(graph)) {
    throw UserError(fmt::format("model '{}' reads no token ids: the GPU-count sweep is for language models", graph.name()));
  }
  std::vector<GpuCountPoint> points;
  for (const int devices : counts) {
    if (starting) starting(devices);
    points.push_back(plan_count(graph, cost, kind, devices, global_batch, strategy, options, peak_flops));
  }
  return points;
}

}  // namespace burst::planner
