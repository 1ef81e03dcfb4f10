#pragma once
// "How many GPUs?" for a language model (docs/llm.md, "How many GPUs"): the best plan of one
// strategy (choose_plan) at each GPU count of a built-in cluster of one kind, with its
// tokens/s and MFU per GPU, peak memory and GPU-hours per billion tokens. A count where no
// plan fits keeps the reason instead.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "burst/cost/cost_model.h"
#include "burst/graph/graph.h"
#include "burst/planner/auto_planner.h"
#include "burst/timing/evaluate.h"

namespace burst::planner {

struct GpuCountPoint {
  int devices = 0;
  std::optional<ChosenPlan> chosen;  // none: nothing fits (why_not)
  std::string why_not;
  Seconds iteration;
  timing::LanguageModelRate rate;
  Bytes peak_memory;                  // the most any rank needs
  double gpu_hours_per_billion_tokens = 0;
};

// The counts a sweep of up to `devices` visits: 1, 2, 4, ... below it, then `devices`.
std::vector<int> gpu_sweep_counts(int devices);

// The sweep over `counts` of `kind` (cluster::builtin_cluster), at `global_batch` samples of
// the graph's sequence length. `peak_flops` is one device's at the step's precision (MFU);
// `options.capacity` the memory per device. UserError when the graph is not a language
// model (graph::sequence_length), or for a pin no count can take. `starting`, when given, is
// called with each count before it is planned (progress).
std::vector<GpuCountPoint> sweep_gpu_counts(const graph::Graph& graph, const cost::CostModel& cost,
                                            const std::string& kind, const std::vector<int>& counts,
                                            int64_t global_batch, Strategy strategy, const AutoPlanOptions& options,
                                            double peak_flops, const std::function<void(int)>& starting = {});

}  // namespace burst::planner
