#pragma once
// Mixed clusters (docs/heterogeneous.md): sharing a layer's samples among ranks of
// different device kinds so that they finish together, the order in which the burst
// planner draws ranks, and the baselines burst's plans are measured against.
#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <string>
#include <vector>

#include "burst/cost/network.h"
#include "burst/plan/plan.h"
#include "burst/plan/plan_context.h"
#include "burst/planner/burst_planner.h"

namespace burst::planner {

// Shares of `batch` samples among `ranks` ranks whose time for b samples is time(i, b):
// non-decreasing in b, with time(i, 0) taken as 0 (a rank without samples does nothing).
// The shares minimise the largest time, the moment all of them are done.
//
// How: one sample at a time, each to the rank whose time after taking it is the smallest
// (ties to the lower index). The k-th sample given costs the k-th smallest value of the
// merged lists {time(i, 1), time(i, 2), ...} (each list non-decreasing, so a rank's next
// value is the smallest it has left), so the largest time after `batch` samples is the
// batch-th smallest value of all of them. Any other shares take `batch` values, one prefix
// per rank, whose largest is at least that: the result is optimal. Times need not be
// linear: a profile's steps and a kernel's wave quantisation are handled alike. Cost:
// batch + ranks calls of `time`, O(batch log ranks).
std::vector<int64_t> equal_finish_shares(int ranks, int64_t batch, const std::function<double(int, int64_t)>& time);

// The kinds of the context's cluster from fastest to slowest for `graph`: by the whole
// model's forward + backward time at `per_device_batch` samples on one device of the kind,
// ties to more memory per device (`memory_of_kind`, bytes; empty: none), then the cluster's order.
std::vector<int> kinds_fastest_first(const plan::PlanContext& context, int64_t per_device_batch,
                                     const std::vector<double>& memory_of_kind = {});

// The cluster's ranks in the order the burst planner draws them on a mixed cluster: every
// rank of the fastest kind, then the next kind's, ... (each kind's ascending), so that a
// layer on a few devices gets the fastest ones. One kind: 0..N-1.
std::vector<int> rank_order(const plan::PlanContext& context, int64_t global_batch,
                            const std::vector<double>& memory_of_kind = {});

// Shares the samples of `plan`'s layers (of one micro-batch) by speed on a mixed cluster (a plan of one kind is
// returned as it is). Each run of consecutive layers (graph order) on the same ranks is cut
// into blocks of consecutive layers; a block's samples are shared so that its ranks finish
// the block together (equal_finish_shares of the block's summed times), and between blocks
// the output of the block's last layer is re-sharded. Blocks are chosen by dynamic
// programming over the run: the cost of layers i..j is their slowest rank's time, plus the
// re-shard (forward, and backward when gradients flow back) from the best blocking of the
// layers before i, so a cut is made only where differing ratios gain more than the
// re-shard costs (a cheap point: a small activation). Layers whose ranks keep one share
// per rank through a run are one block. Ranks left without a sample drop out of the layer.
// `cache` (optional) keeps each run's blocking for later calls with the same context and
// batch (the burst planner shares one across the plans it compares).
struct ShareCache {
  std::map<std::tuple<graph::LayerId, graph::LayerId, std::vector<int>>, std::vector<std::vector<cost::Shard>>> runs;
};
plan::Plan share_by_speed(const plan::PlanContext& context, plan::Plan plan, ShareCache* cache = nullptr);

// Whether `groups` tensor groups of `size` consecutive ranks from rank 0 each lie on one node
// and so within one kind (a tensor group exchanges activations at every layer: it stays on
// one node's links, and one kind keeps its parts in step). Always true with size 1.
bool tensor_groups_within_nodes(const cluster::Cluster& cluster, int size, int groups);

// ---- baselines ---------------------------------------------------------------------------

// Data parallelism over every rank with one share per rank for all layers, from one speed
// per kind (Poplar's and EasyScale's way): equal_finish_shares of the whole model's time
// (every layer's forward + backward at b samples) on each rank's kind.
plan::Plan plan_one_ratio_data_parallel(const plan::PlanContext& context, int64_t global_batch);

// Data parallelism over every rank with shares by speed per block of layers
// (share_by_speed): burst's per-layer ratios without burst's per-layer device counts.
plan::Plan plan_layer_ratio_data_parallel(const plan::PlanContext& context, int64_t global_batch);

// The burst planner on the ranks of one kind only (the others left idle): the plan on the
// cluster of that kind's groups, its ranks renamed to theirs in the whole cluster.
plan::Plan plan_one_kind(const plan::PlanContext& context, int kind, int64_t global_batch, const BurstOptions& options);

// The three baselines of a mixed cluster (MixedBaselines, burst_planner.h), as plans to
// evaluate with the same context.
MixedBaselines mixed_baselines(const plan::PlanContext& context, int64_t global_batch, const BurstOptions& options);

// How a plan uses each kind of a mixed cluster in an iteration of `iteration` seconds.
struct KindUsage {
  std::string kind;
  int devices = 0;       // of the kind in the cluster
  int devices_used = 0;  // that compute some shard
  // Of all the samples the layers compute (Σ over layers of the global batch), the part
  // computed on this kind.
  double sample_share = 0;
  Seconds compute;       // compute per device of the kind, on average (forward, backward, update)
  Seconds idle;          // per device, on average: iteration - compute (a background job's room)
  double utilisation = 0;  // compute / iteration
};
std::vector<KindUsage> usage_by_kind(const plan::PlanContext& context, const plan::Plan& plan, Seconds iteration);

}  // namespace burst::planner
