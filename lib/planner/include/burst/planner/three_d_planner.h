#pragma once
// The 3-D search for transformer graphs (docs/planner.md, "3-D plans"): tensor-parallel
// size t, pipeline stages p, data-parallel groups d = devices / (t x p), micro-batch size b,
// ZeRO stage and recomputation, searched together under the devices' memory, with any of
// them pinned by the user (nnScaler's constraints; the command line's --tensor-parallel,
// --pipeline-stages, --micro-batch-size, --schedule, --zero, --recompute,
// --sequence-parallel).
//  - candidates: t in 1, 2, 4, ... up to max_tensor and the devices of a node, dividing
//    every attention layer's heads; p dividing devices / t, up to the stages the graph can
//    be cut into; b in 1, 2, 4, ... dividing the batch share of a sample group (global
//    batch / d); sequence parallelism wherever t > 1 (unless pinned off); 1F1B, and
//    interleaved 1F1B with V = 2 where p > 1, p x V stages fit the graph and p divides the
//    micro-batches (only the pinned schedule when one is: interleaved alone tries V = 2
//    and 4); every ZeRO stage (only 0 when d = 1) and recomputation;
//  - each candidate's memory is the step's (program::plan_memory of its plan); those over
//    capacity are dropped;
//  - the rest are ranked by a closed-form estimate (below) and the best `evaluated` are timed
//    by the evaluator (the step program); the fastest is returned;
//  - none fits: UserError "no plan fits" with the smallest requirement found and its shape.
// The estimate: (m + (p - 1) / V) x the slowest stage's time for one micro-batch (its layers'
// forward, backward and recomputation at b samples under their splits, and its tensor
// all-reduces), plus a message each way per chunk boundary, plus the slowest stage's weight
// gradients reduced over d (all-reduce, or reduce-scatter and all-gather under ZeRO) as if it
// did not overlap backward.
#include <cstdint>
#include <optional>
#include <string>

#include "burst/cost/memory.h"
#include "burst/plan/plan.h"
#include "burst/plan/plan_context.h"
#include "burst/planner/parallel_shape.h"
#include "burst/planner/search_options.h"
#include "burst/program/program_options.h"
#include "burst/program/step_memory.h"

namespace burst::planner {

// What the user pinned; the rest is searched.
struct ShapePins {
  std::optional<int> tensor;
  std::optional<int> pipeline;
  std::optional<int64_t> micro_batch;
  std::optional<plan::Schedule> schedule;  // none: 1F1B
  std::optional<cost::Recompute> recompute;
  std::optional<int> zero_stage;
  std::optional<bool> sequence_parallel;  // none: on where t > 1
  std::optional<int> virtual_stages;      // V under --schedule interleaved (none: searched)
  std::optional<int> context_parallel;    // C (none: searched where a sample holds 16K tokens or more)
  std::optional<int> expert_parallel;     // E (none: searched for moe models without tensor groups)
};

// SearchOptions: the step (its recompute and ZeRO stage are searched unless pinned), the
// memory candidates must fit, the optimizer.
struct ThreeDOptions : SearchOptions {
  ShapePins pins;
  int evaluated = 2;   // candidates timed by the evaluator
  int max_tensor = 8;  // the largest tensor group tried (unless pinned)
};

struct ThreeDResult {
  plan::Plan plan;                  // strategy "3d"
  ParallelShape shape;
  program::ProgramOptions program;  // the step chosen: the options' with the chosen recompute and ZeRO stage
  Seconds predicted;                // the evaluator's iteration time
  int candidates = 0;               // shapes x ZeRO x recomputation considered
  int fitting = 0;                  // of those, the ones that fit
};

// Whether `graph` has attention layers (the graphs the 3-D search is for).
bool has_attention(const graph::Graph& graph);

// Plans `global_batch` samples on the context's cluster. UserError for a pinned value the
// model, cluster or batch cannot take (check_shape's reasons), a graph without attention
// layers when t > 1 is pinned, or when no candidate fits.
ThreeDResult plan_3d(const plan::PlanContext& context, int64_t global_batch, const ThreeDOptions& options);

}  // namespace burst::planner
