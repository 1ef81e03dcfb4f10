#pragma once
// What the burst planner asks over and over, computed once: each layer's candidate device
// counts with their compute and all-reduce times, and re-shard times between placements.
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "burst/planner/burst_planner.h"
#include "burst/planner/heterogeneous.h"
#include "burst/timing/evaluate.h"

namespace burst::planner::detail {

// The searches build plans from the plan library's types and rules throughout, and price
// them with the evaluator.
using namespace burst::plan;  // NOLINT(google-build-using-namespace)
using timing::evaluate_plan;
using timing::EvaluateOptions;
using timing::PlanEvaluation;

// A layer on `count` consecutive positions from `offset` of the planner's rank order
// (PlannerCosts::rank_at: ranks 0..N-1 on a cluster of one kind, the fastest kind's first on
// a mixed one), the batch split evenly (one kind) or so that its ranks finish together
// (mixed: heterogeneous.h's equal_finish_shares; the plan's shares are share_by_speed's).
struct Placement {
  int offset = 0;
  int count = 1;
};

// One layer at one device count, all times in seconds.
struct LayerStep {
  int count = 1;
  double forward = 0;   // largest shard, ceil(B / count) samples
  double backward = 0;
  double sync = 0;      // all-reduce of the weight gradients over ranks 0..count-1
};

class PlannerCosts {
 public:
  PlannerCosts(const PlanContext& context, int64_t global_batch, const BurstOptions& options);

  const PlanContext& context() const { return context_; }
  int64_t global_batch() const { return batch_; }
  int devices() const { return devices_; }
  // The most ranks a layer may use: min(devices, global batch).
  int usable() const { return usable_; }

  // Counts 1..usable() (all), or the smallest count per distinct per-device batch, thinned
  // geometrically to at most `limit` (1 and usable() always kept).
  std::vector<int> base_counts(int limit) const;

  // Mixed clusters: the blockings share_by_speed found, kept across the plans compared.
  ShareCache& share_cache() { return share_cache_; }

  // The amplification limit allowed() applies from now on (>= 1, or infinity).
  void set_amplification(double limit) { amplification_ = limit; }

  // Whether `count` is within the amplification limit for `layer` (always for count 1, for
  // layers that take no time and for exempt ones).
  bool allowed(graph::LayerId layer, int count);
  // Whether `layer`'s one-device time at the whole batch is under the exemption threshold.
  bool exempt(graph::LayerId layer);
  // n x t(ceil(B/n)) / t(B) with t = forward + backward; 1 for layers that take no time.
  double amplification(graph::LayerId layer, int count);

  // Compute and sync times of `layer` on the placement's ranks.
  LayerStep step(graph::LayerId layer, Placement placement);

  // The rank at `position` of the planner's order, and a placement's ranks in order.
  int rank_at(int position) const { return order_.empty() ? position : order_[static_cast<size_t>(position)]; }
  std::vector<int> ranks(Placement placement) const;

  // Re-shard time of `producer`'s output between two placements (0 when either side is a
  // virtual terminal, i.e. producer < 0, or when nothing crosses ranks).
  double transfer(graph::LayerId producer, Placement from, Placement to);

  // One of several re-shards whose messages share ports (a producer's output to every
  // concurrent branch; every branch's output to their consumer). Its activations are ready
  // `forward_ready_s` after a common moment, its gradients `backward_ready_s` after another.
  struct Reshard {
    graph::LayerId producer = 0;
    Placement from, to;
    double forward_ready_s = 0;
    double backward_ready_s = 0;
  };
  // When each re-shard's last message ends, seconds from that moment, forward and backward
  // (the gradients: the same pieces the other way; none for a producer that takes no
  // gradient, as the data), with the ports the step holds (plan::MessagePorts): one message
  // at a time per port, in the order they are ready, then senders by rank, a sender's
  // messages in the order of `reshards` (the program's: consumers in graph order), then
  // samples.
  struct SharedTimes {
    std::vector<double> forward, backward;
  };
  SharedTimes shared_transfers(const std::vector<Reshard>& reshards);

 private:
  // Per-rank message counts and samples for one pair of prefix placements, reduced to the
  // ranks that can be the busiest (no other rank has at least as much of everything).
  struct RankLoad {
    double intra_messages = 0, intra_samples = 0, inter_messages = 0, inter_samples = 0;
  };
  const std::vector<RankLoad>& prefix_loads(int from_count, int to_count);
  double compute_time(graph::LayerId layer, int64_t per_device_batch, bool forward);
  // Mixed clusters: the layer's time at `samples` on kind `kind`, and its shares on a
  // placement (cached).
  const cost::LayerTime& kind_time(graph::LayerId layer, int kind, int64_t samples);
  const std::vector<int64_t>& kind_shares(graph::LayerId layer, Placement placement);
  LayerStep heterogeneous_step(graph::LayerId layer, Placement placement);
  bool syncs_batchnorm(graph::LayerId layer, int count) const;
  void add_batchnorm_sync(graph::LayerId layer, Placement placement, int64_t shard, LayerStep& step);

  const PlanContext& context_;
  std::vector<int> order_;      // position -> rank; empty: the identity (one kind)
  std::vector<int> kind_at_;    // position -> kind index (mixed clusters)
  int64_t batch_;
  int devices_;
  int usable_;
  double amplification_;
  double exempt_below_;  // seconds
  bool sync_batchnorm_;
  std::map<std::pair<graph::LayerId, int64_t>, std::optional<cost::LayerTime>> split_times_;
  std::map<std::pair<int64_t, int64_t>, double> batchnorm_syncs_;  // (placement key, channels)
  std::unordered_map<int64_t, std::vector<RankLoad>> prefix_loads_;  // key from*2^31+to
  std::map<std::pair<graph::LayerId, int64_t>, cost::LayerTime> times_;
  // Mixed clusters: [layer x kinds + kind][samples], filled as asked.
  std::vector<std::vector<std::optional<cost::LayerTime>>> kind_times_;
  std::map<std::tuple<graph::LayerId, int, int>, std::vector<int64_t>> kind_shares_;  // (layer, offset, count)
  // Mixed clusters: per (from, to) placements, each busy side's (a rank's sends, or its
  // receives) messages and samples per link kind (link_kinds_), flattened: [side][link] =
  // {messages, samples}.
  struct SideLoads {
    std::vector<double> messages, samples;  // sides x links
  };
  const SideLoads& mixed_loads(Placement from, Placement to);
  int link_kind(int a, int b) const;
  std::vector<cluster::Link> link_kinds_;  // groups' intra, inter, then between groups
  std::map<std::tuple<int, int, int, int>, SideLoads> mixed_loads_;
  ShareCache share_cache_;
  std::map<std::pair<int64_t, int64_t>, double> allreduce_;  // (count or group key, bytes)
};

}  // namespace burst::planner::detail
