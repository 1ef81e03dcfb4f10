#pragma once
// The burst planner: every layer on its own number of devices, chosen by dynamic
// programming to minimise the predicted iteration time (timing/evaluate.h's schedule), under an
// amplification limit. docs/planner.md describes the algorithm; the essentials:
//  - a layer on n devices runs on ranks 0..n-1 with the batch split evenly (prefix
//    placement: groups up to a node's size stay inside one node). On a mixed cluster
//    (several kinds, PlanContext::kind_costs) the prefix is of the fastest-first rank order
//    (heterogeneous.h) and the batch is shared so that the layer's ranks finish together
//    under their own kinds' times: layers whose speed ratios differ get different shares;
//  - n is limited by the amplification limit A: n x t(ceil(B/n)) <= A x t(B), with t the
//    layer's forward + backward time; n = 1 is always allowed, and so is any n for a layer
//    whose t(B) is under BurstOptions::amplification_exempt_below (ReLU, pooling, flatten:
//    as DeepPool, a layer that costs almost nothing should not force a slower plan);
//  - the graph is decomposed into series and parallel parts. Series parts are solved by
//    dynamic programming whose labels carry (compute time, communication-queue time) so
//    all-reduces overlapping backward are priced; on a chain the result is the optimum,
//    over prefix placements, of the planner's own model of a step (a layer starts on all its
//    ranks together, a re-shard takes its busiest port's messages one after another, one
//    all-reduce per layer, no gradient into the data; lib/planner/test/planner_property_test.cpp
//    restates it). The step program the evaluator times lets ranks go ahead on their own
//    and merges all-reduces into buckets; with one bucket per layer it was never slower on
//    the property test's chains. Parallel branches are planned either one after another on
//    the whole cluster or concurrently on disjoint rank ranges, whichever is faster (there
//    the re-shards into and out of all branches share the ports of the ends' ranks, and
//    each end waits for the slowest branch); regions that are not series-parallel get one
//    device count for all their layers (a sound fallback).
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "burst/plan/plan.h"
#include "burst/plan/plan_context.h"
#include "burst/program/program_options.h"
#include "burst/planner/search_options.h"

namespace burst::planner {

// SearchOptions: the step planned for (`program`; with sync_batchnorm, BatchNorm on two or
// more devices is priced at its split times and its two blocking all-reduces, without, as
// any layer; the evaluator times candidates with its buckets). The burst search has no
// memory model of its own: `capacity` is for whoever fits its plan after (the auto planner).
// AmplificationRule: the limit A and the layers exempt from it.
struct BurstOptions : SearchOptions, AmplificationRule {
  // Never return a plan slower than data parallelism on the same cluster: when the limit
  // makes the plan slower (it can at small device counts, where data parallelism already
  // amplifies layers beyond A), raise it to the smallest amplification level at which the
  // plan is not slower, and report that level. False keeps the limit strictly.
  bool never_slower_than_dp = true;
  // Allow parallel branches on disjoint rank ranges at the same time.
  bool concurrent_branches = true;
  // Device counts tried per layer on the main series chain. All counts 1..min(N, B) when
  // they are at most this many; otherwise the smallest count for each distinct per-device
  // batch ceil(B/n), thinned geometrically to this many.
  int max_candidates = 128;
  // The same inside parallel branches, where the work grows with the cube of the count.
  int max_branch_candidates = 24;
  // Mixed clusters: each kind's memory per device, bytes, by the cluster's kind index; kinds
  // of equal speed are drawn with more memory first (heterogeneous.h's rank_order). Empty:
  // the cluster's order.
  std::vector<double> memory_of_kind;
};

// Plans `global_batch` samples on the context's cluster. Throws UserError for a global
// batch < 1 or an amplification limit < 1 (or NaN), and when the cost model has no time
// for a layer.
plan::Plan plan_burst(const plan::PlanContext& context, int64_t global_batch, const BurstOptions& options = {});

// The three baselines of a mixed cluster (heterogeneous.h's mixed_baselines), as plans: the
// best kind alone (the burst planner on each kind's ranks; the fastest by the evaluator),
// all devices split evenly (what DDP does), and all devices with one ratio per kind
// (Poplar, EasyScale).
struct MixedBaselines {
  int alone_kind = 0;  // the kind of `alone`, an index into the cluster's kinds
  plan::Plan alone;
  plan::Plan even;
  plan::Plan one_ratio;
};

// The planner's own prediction of the plan it returned, in its own model (plus the
// optimizer step): an upper bound of evaluate_plan's on chains with one bucket per layer,
// an estimate otherwise. For tests and diagnostics.
struct BurstPlanResult {
  plan::Plan plan;
  Seconds predicted;
  // The amplification limit the plan was made under: options.amplification, or the raised
  // one (see never_slower_than_dp).
  double amplification_limit = 0;
  // Mixed clusters, when the plan was compared with them (never_slower_than_dp): the baselines.
  std::optional<MixedBaselines> mixed_baselines = std::nullopt;
};
BurstPlanResult plan_burst_with_prediction(const plan::PlanContext& context, int64_t global_batch,
                                           const BurstOptions& options = {});

}  // namespace burst::planner
