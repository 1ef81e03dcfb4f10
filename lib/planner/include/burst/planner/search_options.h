#pragma once
// What every search is asked, embedded (as a base) in each search's options: BurstOptions,
// PipelineOptions, TensorOptions, ThreeDOptions, ClockSearchOptions and the auto planner's
// PlanRequest. A setting every search needs is added here once and reaches all of them;
// a search that makes another (the pipeline's burst stages, `auto`'s candidates) hands it on
// whole (docs/architecture.md, "One set of options shapes a step").
#include <optional>

#include "burst/cost/memory.h"
#include "burst/program/program_options.h"
#include "burst/program/step_memory.h"
#include "burst/timing/evaluate.h"
#include "burst/util/units.h"

namespace burst::planner {

struct SearchOptions {
  // The step planned for, of every candidate: the one the runtime will run (buckets, the
  // BatchNorm mode, precision, recomputation, ZeRO, clipping, power cap).
  program::ProgramOptions program;
  // Each device's memory; candidates over it are skipped (or, for a plan made without a
  // memory model, fitted after: the auto planner). None: no limit.
  std::optional<program::MemoryCapacity> capacity;
  cost::Optimizer optimizer = cost::Optimizer::Sgd;  // whose state the memory model counts
  // How candidates are timed: every rank, or one per class of ranks that time the same
  // (EvaluateOptions::time_each_rank; the same result, slower; for tests).
  bool time_each_rank = false;

  // The evaluator's options for a candidate of this search.
  timing::EvaluateOptions evaluate_options() const {
    timing::EvaluateOptions evaluate;
    evaluate.program = program;
    evaluate.time_each_rank = time_each_rank;
    return evaluate;
  }
  SearchOptions& search() { return *this; }
  const SearchOptions& search() const { return *this; }
};

// DeepPool's amplification rule (docs/planner.md), shared by the burst and tensor searches:
// a layer may run on n devices only if n x t(B/n) <= amplification x t(B), t its forward and
// backward time; layers whose t(B) is under `amplification_exempt_below` are exempt.
struct AmplificationRule {
  double amplification = 2.0;  // >= 1; infinity lifts it. DeepPool's default is 2
  Seconds amplification_exempt_below = Seconds(300e-6);  // DeepPool's 300 us; 0: none is exempt
  AmplificationRule& rule() { return *this; }
  const AmplificationRule& rule() const { return *this; }
};

}  // namespace burst::planner
