#pragma once
// The pipeline planner (docs/pipelines.md): stages of consecutive layers, each data
// parallel on its own equal share of the devices, m micro-batches, GPipe or 1F1B, in the
// way of DAPPLE's planner:
//  - stage boundaries only where one tensor crosses (valid_stage_starts);
//  - for every stage count p and micro-batch count m (a divisor of the batch), the
//    boundaries that minimise the slowest stage's forward + backward time at the
//    micro-batch's shard size, by dynamic programming over the valid boundaries;
//  - each candidate estimated as (m + p - 1) x the slowest stage + a message each way per
//    boundary + the slowest stage's gradient all-reduce;
//  - the best estimates built as plans, checked against memory, and timed by the evaluator
//    (the step program), under each schedule; the fastest that fits is returned.
// One stage with several micro-batches (gradient accumulation) is a candidate too.
//
// The hybrid (PipelineOptions::burst_stages): inside each stage, burst placements instead
// of data parallelism. For a candidate with d devices a stage, the burst planner plans the
// whole graph at the micro-batch on a cluster of d devices (the first d of the context's);
// each stage takes that plan's placements of its own layers, moved to its ranks.
#include <cstdint>
#include <optional>
#include <vector>

#include "burst/cost/memory.h"
#include "burst/planner/burst_planner.h"
#include "burst/plan/plan.h"
#include "burst/plan/plan_context.h"
#include "burst/program/step_memory.h"

namespace burst::planner {

// SearchOptions: the step planned for, of every candidate (a BatchNorm model plans one
// micro-batch), the memory candidates must fit (over it: skipped), the optimizer.
struct PipelineOptions : SearchOptions {
  std::vector<plan::Schedule> schedules{plan::Schedule::OneFOneB, plan::Schedule::GPipe};
  int max_stages = 64;
  std::optional<int> stages;  // pinned: only pipelines of this many stages
  // How many of the best-estimated (stages, micro-batches) candidates that fit are timed by
  // the evaluator, each under every schedule.
  int evaluated = 3;
  // Which plans each candidate gives: data-parallel stages (PipelinePlanResult::plan), and
  // the hybrid, burst placements inside the stages planned with `burst` (::hybrid). Both:
  // one search for both, the hybrid timed only where it differs.
  bool data_parallel_stages = true;
  bool burst_stages = false;
  // The burst search inside the stages: its amplification rule and knobs (its own
  // SearchOptions are replaced by these options').
  BurstOptions burst;
};

struct PipelinePlanResult {
  std::optional<plan::Plan> plan;  // data-parallel stages; none when no candidate fits or not asked for
  Seconds predicted;         // the evaluator's iteration time of `plan`
  std::optional<plan::Plan> hybrid;  // burst placements inside the stages (strategy "hybrid"), if asked for
  Seconds hybrid_predicted;
  int estimated = 0;         // (stages, micro-batches) candidates estimated
  int timed = 0;             // plans timed by the evaluator
};

// Layers a stage may start at (ascending, never 0): those before which exactly one layer's
// output is used after (plan::validate_plan's rule).
std::vector<graph::LayerId> valid_stage_starts(const graph::Graph& graph);

// Plans `global_batch` samples on the context's cluster (UserError for a batch < 1).
PipelinePlanResult plan_pipeline(const plan::PlanContext& context, int64_t global_batch, const PipelineOptions& options = {});

}  // namespace burst::planner
