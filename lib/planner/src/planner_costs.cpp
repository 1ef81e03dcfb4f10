#include "planner_costs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "burst/timing/step_tasks.h"
#include "burst/program/step_program.h"
#include "burst/util/error.h"

namespace burst::planner::detail {

using timing::MessagePorts;
using timing::Task;
using timing::TaskKind;

namespace {

std::vector<int> rank_range(Placement placement) {
  std::vector<int> ranks(static_cast<size_t>(placement.count));
  std::iota(ranks.begin(), ranks.end(), placement.offset);
  return ranks;
}

}  // namespace

PlannerCosts::PlannerCosts(const PlanContext& context, int64_t global_batch,
                           const BurstOptions& options)
    : context_(context),
      batch_(global_batch),
      devices_(context.network.cluster().size()),
      usable_(static_cast<int>(std::min<int64_t>(devices_, global_batch))),
      amplification_(options.amplification),
      exempt_below_(options.amplification_exempt_below.s()),
      sync_batchnorm_(options.program.sync_batchnorm) {}

std::vector<int> PlannerCosts::base_counts(int limit) const {
  BURST_ASSERT(limit >= 2, "a candidate limit below 2");
  std::vector<int> counts;
  if (usable_ <= limit) {
    counts.resize(static_cast<size_t>(usable_));
    std::iota(counts.begin(), counts.end(), 1);
    return counts;
  }
  // The smallest n for each per-device batch q = ceil(B/n): n = ceil(B/q), for q from
  // ceil(B/usable) up to B. A larger n with the same q computes as long and syncs more.
  const int64_t smallest_q = (batch_ + usable_ - 1) / usable_;
  for (int64_t q = batch_; q >= smallest_q; --q) {
    const auto n = static_cast<int>((batch_ + q - 1) / q);
    if (counts.empty() || counts.back() != n) counts.push_back(n);
  }
  if (counts.back() != usable_) counts.push_back(usable_);
  if (static_cast<int>(counts.size()) <= limit) return counts;
  // Thin geometrically: keep a count when it is at least `ratio` times the last kept one.
  const double ratio = std::pow(static_cast<double>(usable_), 1.0 / (limit - 1));
  std::vector<int> thinned{counts.front()};
  for (size_t i = 1; i + 1 < counts.size(); ++i) {
    if (counts[i] >= thinned.back() * ratio) thinned.push_back(counts[i]);
  }
  thinned.push_back(counts.back());
  return thinned;
}

double PlannerCosts::compute_time(graph::LayerId layer, int64_t per_device_batch, bool forward) {
  const auto key = std::make_pair(layer, per_device_batch);
  auto found = times_.find(key);
  if (found == times_.end()) {
    found = times_.emplace(key, context_.cost.require(context_.graph, layer, per_device_batch).time).first;
  }
  return (forward ? found->second.forward : found->second.backward).s();
}

bool PlannerCosts::exempt(graph::LayerId layer) {
  return compute_time(layer, batch_, true) + compute_time(layer, batch_, false) < exempt_below_;
}

bool PlannerCosts::allowed(graph::LayerId layer, int count) {
  if (count == 1 || std::isinf(amplification_) || exempt(layer)) return true;
  return amplification(layer, count) <= amplification_ * (1 + 1e-12);
}

double PlannerCosts::amplification(graph::LayerId layer, int count) {
  const double whole = compute_time(layer, batch_, true) + compute_time(layer, batch_, false);
  if (whole <= 0) return 1.0;
  const int64_t shard = (batch_ + count - 1) / count;
  return count * (compute_time(layer, shard, true) + compute_time(layer, shard, false)) / whole;
}

bool PlannerCosts::syncs_batchnorm(graph::LayerId layer, int count) const {
  return sync_batchnorm_ && count > 1 && context_.graph.layer(layer).op() == graph::OpKind::BatchNorm2d;
}

// A synchronised BatchNorm's split time where the cost model has one (the runtime's split
// implementation), plus its statistics all-reduce (2 x channels float64 sums, blocking) in
// each direction.
void PlannerCosts::add_batchnorm_sync(graph::LayerId layer, Placement placement, int64_t shard, LayerStep& step) {
  const auto key = std::make_pair(layer, shard);
  auto split = split_times_.find(key);
  if (split == split_times_.end()) {
    const auto estimate = context_.cost.estimate_split(context_.graph, layer, shard);
    split = split_times_.emplace(key, estimate ? std::optional<cost::LayerTime>(estimate->time) : std::nullopt).first;
  }
  if (split->second) {
    step.forward = split->second->forward.s();
    step.backward = split->second->backward.s();
  }
  const int64_t channels = context_.graph.info(layer).output_shape.at(0);
  const auto sync_key = std::make_pair(static_cast<int64_t>(placement.offset) * (int64_t{1} << 31) + placement.count,
                                       channels);
  auto found = batchnorm_syncs_.find(sync_key);
  if (found == batchnorm_syncs_.end()) {
    const Bytes statistics(2.0 * static_cast<double>(channels) * 8);  // Σx and Σx² (or Σdy, Σdy·x̂), float64
    found = batchnorm_syncs_.emplace(sync_key, context_.network.allreduce(rank_range(placement), statistics).s()).first;
  }
  const double sync = found->second;
  step.forward += sync;
  step.backward += sync;
}

LayerStep PlannerCosts::step(graph::LayerId layer, Placement placement) {
  LayerStep result;
  result.count = placement.count;
  const int64_t shard = (batch_ + placement.count - 1) / placement.count;
  result.forward = compute_time(layer, shard, true);
  result.backward = compute_time(layer, shard, false);
  if (syncs_batchnorm(layer, placement.count)) add_batchnorm_sync(layer, placement, shard, result);
  const int64_t params = context_.graph.info(layer).params;
  if (params > 0 && placement.count > 1) {
    const auto key = std::make_pair(static_cast<int64_t>(placement.offset) * (int64_t{1} << 31) +
                                        placement.count, params);
    auto found = allreduce_.find(key);
    if (found == allreduce_.end()) {
      const Bytes gradients(static_cast<double>(params) * 4.0);  // fp32, as evaluate_plan
      found = allreduce_.emplace(key, context_.network.allreduce(rank_range(placement), gradients).s()).first;
    }
    result.sync = found->second;
  }
  return result;
}

const std::vector<PlannerCosts::RankLoad>& PlannerCosts::prefix_loads(int from_count, int to_count) {
  const int64_t key = static_cast<int64_t>(from_count) * (int64_t{1} << 31) + to_count;
  auto found = prefix_loads_.find(key);
  if (found != prefix_loads_.end()) return found->second;
  const int per_node = context_.network.cluster().devices_per_node();  // rank r is on node r / per_node
  // Keep only loads no other load covers in all four quantities.
  std::vector<RankLoad> busiest;
  auto covers = [](const RankLoad& a, const RankLoad& b) {
    return a.intra_messages >= b.intra_messages && a.intra_samples >= b.intra_samples &&
           a.inter_messages >= b.inter_messages && a.inter_samples >= b.inter_samples;
  };
  auto keep = [&](const RankLoad& load) {
    if (load.intra_messages + load.inter_messages == 0) return;
    if (std::any_of(busiest.begin(), busiest.end(), [&](const RankLoad& kept) { return covers(kept, load); })) {
      return;
    }
    busiest.erase(std::remove_if(busiest.begin(), busiest.end(), [&](const RankLoad& kept) { return covers(load, kept); }),
                  busiest.end());
    busiest.push_back(load);
  };
  // Walk the two even splits side by side (what reshard_transfers would list for them):
  // each overlap of a source shard with a destination shard is one message. Both ranks only
  // grow along the walk, so each rank's sends (and receives) are consecutive: a rank's load
  // is complete when the walk moves past it.
  auto shard_end = [&](int count, int index) {  // end of shard `index` of an even split
    const int64_t base = batch_ / count, extra = batch_ % count;
    return (index + 1) * base + std::min<int64_t>(index + 1, extra);
  };
  RankLoad sending, receiving;  // of ranks `src` and `dst`
  int src = 0, dst = 0;
  int64_t begin = 0;
  while (begin < batch_) {
    const int64_t src_end = shard_end(from_count, src), dst_end = shard_end(to_count, dst);
    const int64_t end = std::min(src_end, dst_end);
    if (src != dst) {
      const bool intra = src / per_node == dst / per_node;
      const auto samples = static_cast<double>(end - begin);
      for (RankLoad* load : {&sending, &receiving}) {
        (intra ? load->intra_messages : load->inter_messages) += 1;
        (intra ? load->intra_samples : load->inter_samples) += samples;
      }
    }
    if (end == src_end) {
      keep(sending);
      sending = RankLoad{};
      ++src;
    }
    if (end == dst_end) {
      keep(receiving);
      receiving = RankLoad{};
      ++dst;
    }
    begin = end;
  }
  return prefix_loads_.emplace(key, std::move(busiest)).first->second;
}

namespace {

// One non-local piece of an even-split re-shard: from the source shard's rank to the
// destination's, taking `seconds` either way (a link's time is the same both ways).
struct Piece {
  int src = 0, dst = 0;
  double seconds = 0;
};

// The pieces of `reshard` in sample order, walking both even splits (what
// cost::reshard_transfers lists for them, without building the shards): along the walk both
// the source and the destination rank only grow.
std::vector<Piece> even_reshard_pieces(const PlannerCosts::Reshard& reshard, int64_t batch,
                                       const cost::NetworkModel& network, Bytes per_sample) {
  auto shard_end = [batch](Placement placement, int index) {  // end of shard `index`
    const int64_t base = batch / placement.count, extra = batch % placement.count;
    return (index + 1) * base + std::min<int64_t>(index + 1, extra);
  };
  std::vector<Piece> pieces;
  int src = 0, dst = 0;
  int64_t begin = 0;
  while (begin < batch) {
    const int64_t src_end = shard_end(reshard.from, src), dst_end = shard_end(reshard.to, dst);
    const int64_t end = std::min(src_end, dst_end);
    const int src_rank = reshard.from.offset + src, dst_rank = reshard.to.offset + dst;
    if (src_rank != dst_rank && end > begin) {
      const Bytes bytes = per_sample * static_cast<double>(end - begin);
      pieces.push_back(Piece{src_rank, dst_rank, network.point_to_point(src_rank, dst_rank, bytes).s()});
    }
    if (end == src_end) ++src;
    if (end == dst_end) ++dst;
    begin = end;
  }
  return pieces;
}

// The ports' schedule of one direction: `pieces[k]` of reshard k (each list ascending in its
// senders), ready `ready[k]` after the common moment; `backward` sends from dst to src.
// Returns each reshard's last end (its ready time when it sends nothing).
std::vector<double> serve_in_order(const std::vector<std::vector<Piece>>& pieces, const std::vector<double>& ready,
                                   bool backward) {
  const size_t count = pieces.size();
  auto sender = [backward](const Piece& piece) { return backward ? piece.dst : piece.src; };
  int span = 0;
  for (const auto& list : pieces) {
    for (const Piece& piece : list) span = std::max({span, piece.src + 1, piece.dst + 1});
  }
  MessagePorts ports(span);
  std::vector<double> ends(ready);
  std::vector<size_t> order(count), next(count, 0);
  for (size_t k = 0; k < count; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ready[a] < ready[b]; });
  for (size_t group = 0; group < count;) {  // reshards ready at one moment, merged by sender
    size_t group_end = group;
    while (group_end < count && ready[order[group_end]] == ready[order[group]]) ++group_end;
    while (true) {
      size_t pick = count;  // the reshard whose next piece has the lowest sender (first in order on ties)
      for (size_t g = group; g < group_end; ++g) {
        const size_t k = order[g];
        if (next[k] == pieces[k].size()) continue;
        if (pick == count || sender(pieces[k][next[k]]) < sender(pieces[pick][next[pick]])) pick = k;
      }
      if (pick == count) break;
      const Piece& piece = pieces[pick][next[pick]++];
      Task message;
      message.kind = TaskKind::Message;
      message.rank = sender(piece);
      message.peer = backward ? piece.src : piece.dst;
      message.duration_s = piece.seconds;
      ends[pick] = std::max(ends[pick], ports.claim(message, ready[pick]) + piece.seconds);
    }
    group = group_end;
  }
  return ends;
}

}  // namespace

PlannerCosts::SharedTimes PlannerCosts::shared_transfers(const std::vector<Reshard>& reshards) {
  std::vector<std::vector<Piece>> forward(reshards.size()), backward(reshards.size());
  std::vector<double> forward_ready, backward_ready;
  for (size_t k = 0; k < reshards.size(); ++k) {
    const Reshard& reshard = reshards[k];
    const Bytes per_sample(static_cast<double>(context_.graph.info(reshard.producer).output_bytes));
    forward[k] = even_reshard_pieces(reshard, batch_, context_.network, per_sample);
    if (program::carries_gradient(context_.graph, reshard.producer)) backward[k] = forward[k];
    forward_ready.push_back(reshard.forward_ready_s);
    backward_ready.push_back(reshard.backward_ready_s);
  }
  return SharedTimes{serve_in_order(forward, forward_ready, false), serve_in_order(backward, backward_ready, true)};
}

double PlannerCosts::transfer(graph::LayerId producer, Placement from, Placement to) {
  if (producer < 0) return 0;
  const Bytes bytes_per_sample(static_cast<double>(context_.graph.info(producer).output_bytes));
  if (from.offset != 0 || to.offset != 0) {
    const auto transfers = cost::reshard_transfers(even_split(rank_range(from), batch_),
                                                   even_split(rank_range(to), batch_));
    return context_.network.reshard(transfers, bytes_per_sample).s();
  }
  if (from.count == to.count) return 0;
  const cluster::Cluster& cluster = context_.network.cluster();
  const cluster::Link& intra = cluster.intra_node();
  const cluster::Link& inter = cluster.inter_node();
  const double intra_per_sample = (bytes_per_sample / intra.bandwidth).s();
  const double inter_per_sample = (bytes_per_sample / inter.bandwidth).s();
  double busiest = 0;
  for (const RankLoad& load : prefix_loads(from.count, to.count)) {
    busiest = std::max(busiest, load.intra_messages * intra.latency.s() + load.intra_samples * intra_per_sample +
                                    load.inter_messages * inter.latency.s() + load.inter_samples * inter_per_sample);
  }
  return busiest;
}

}  // namespace burst::planner::detail
