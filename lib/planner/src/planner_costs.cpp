#include "planner_costs.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include <fmt/format.h>

#include "burst/planner/heterogeneous.h"
#include "burst/timing/step_tasks.h"
#include "burst/program/step_program.h"
#include "burst/util/error.h"

namespace burst::planner::detail {

using timing::MessagePorts;
using timing::Task;
using timing::TaskKind;

PlannerCosts::PlannerCosts(const PlanContext& context, int64_t global_batch,
                           const BurstOptions& options)
    : context_(context),
      order_(context.heterogeneous() ? rank_order(context, global_batch, options.memory_of_kind) : std::vector<int>{}),
      batch_(global_batch),
      devices_(context.network.cluster().size()),
      usable_(static_cast<int>(std::min<int64_t>(devices_, global_batch))),
      amplification_(options.amplification),
      exempt_below_(options.amplification_exempt_below.s()),
      sync_batchnorm_(options.program.sync_batchnorm) {
  const cluster::Cluster& cluster = context.network.cluster();
  for (const int rank : order_) kind_at_.push_back(cluster.kind_index(rank));
  if (!order_.empty()) {
    for (const cluster::DeviceGroup& group : cluster.groups()) {
      link_kinds_.push_back(group.intra_node);
      link_kinds_.push_back(group.inter_node);
    }
    if (cluster.between_groups()) link_kinds_.push_back(*cluster.between_groups());
  }
}

int PlannerCosts::link_kind(int a, int b) const {
  const cluster::Cluster& cluster = context_.network.cluster();
  const int group_a = cluster.group_of(a);
  if (group_a != cluster.group_of(b)) return static_cast<int>(link_kinds_.size()) - 1;
  return 2 * group_a + (cluster.node_of(a) == cluster.node_of(b) ? 0 : 1);
}

// The even-split re-shard between two placements, as each rank's sends and receives per link
// kind: a re-shard's time is then max over sides of Σ_links messages x latency + samples x
// bytes per sample / bandwidth (NetworkModel::reshard's), for any bytes per sample.
const PlannerCosts::SideLoads& PlannerCosts::mixed_loads(Placement from, Placement to) {
  const auto key = std::make_tuple(from.offset, from.count, to.offset, to.count);
  auto found = mixed_loads_.find(key);
  if (found != mixed_loads_.end()) return found->second;
  const size_t links = link_kinds_.size();
  std::map<int, size_t> side_of;  // 2 x rank (+1 for receiving) -> side index
  SideLoads loads;
  for (const cost::Transfer& transfer : cost::reshard_transfers(even_split(ranks(from), batch_), even_split(ranks(to), batch_))) {
    if (transfer.local() || transfer.samples.size() == 0) continue;
    const auto link = static_cast<size_t>(link_kind(transfer.src_rank, transfer.dst_rank));
    for (const int side_key : {2 * transfer.src_rank, 2 * transfer.dst_rank + 1}) {
      auto side = side_of.find(side_key);
      if (side == side_of.end()) {
        side = side_of.emplace(side_key, loads.messages.size() / links).first;
        loads.messages.resize(loads.messages.size() + links, 0.0);
        loads.samples.resize(loads.samples.size() + links, 0.0);
      }
      loads.messages[side->second * links + link] += 1;
      loads.samples[side->second * links + link] += static_cast<double>(transfer.samples.size());
    }
  }
  // Keep only sides no other side covers in every count: they cannot be the busiest.
  const size_t sides = loads.messages.size() / std::max<size_t>(links, 1);
  auto covers = [&](size_t a, size_t b) {
    for (size_t link = 0; link < links; ++link) {
      if (loads.messages[a * links + link] < loads.messages[b * links + link] ||
          loads.samples[a * links + link] < loads.samples[b * links + link]) {
        return false;
      }
    }
    return true;
  };
  SideLoads kept;
  std::vector<size_t> kept_sides;
  for (size_t side = 0; side < sides; ++side) {
    bool covered = false;
    for (size_t other = 0; other < sides && !covered; ++other) {
      // Covered by another side (ties: by the earlier one only, so one of equals stays).
      covered = other != side && covers(other, side) && (!covers(side, other) || other < side);
    }
    if (covered) continue;
    kept.messages.insert(kept.messages.end(), loads.messages.begin() + static_cast<std::ptrdiff_t>(side * links),
                         loads.messages.begin() + static_cast<std::ptrdiff_t>((side + 1) * links));
    kept.samples.insert(kept.samples.end(), loads.samples.begin() + static_cast<std::ptrdiff_t>(side * links),
                        loads.samples.begin() + static_cast<std::ptrdiff_t>((side + 1) * links));
  }
  return mixed_loads_.emplace(key, std::move(kept)).first->second;
}

std::vector<int> PlannerCosts::ranks(Placement placement) const {
  std::vector<int> ranks(static_cast<size_t>(placement.count));
  for (int i = 0; i < placement.count; ++i) ranks[static_cast<size_t>(i)] = rank_at(placement.offset + i);
  return ranks;
}

const cost::LayerTime& PlannerCosts::kind_time(graph::LayerId layer, int kind, int64_t samples) {
  const size_t kinds = context_.network.cluster().kinds().size();
  if (kind_times_.empty()) kind_times_.resize(context_.graph.size() * kinds);
  auto& known = kind_times_[static_cast<size_t>(layer) * kinds + static_cast<size_t>(kind)];
  if (known.empty()) known.resize(static_cast<size_t>(batch_) + 1);
  auto& time = known[static_cast<size_t>(samples)];
  if (!time) time = context_.cost_of_kind(kind).require(context_.graph, layer, samples).time;
  return *time;
}

const std::vector<int64_t>& PlannerCosts::kind_shares(graph::LayerId layer, Placement placement) {
  const auto key = std::make_tuple(layer, placement.offset, placement.count);
  auto found = kind_shares_.find(key);
  if (found != kind_shares_.end()) return found->second;
  auto time = [&](int i, int64_t samples) {
    return kind_time(layer, kind_at_[static_cast<size_t>(placement.offset + i)], samples).total().s();
  };
  return kind_shares_.emplace(key, equal_finish_shares(placement.count, batch_, time)).first->second;
}

// A mixed placement's compute: the ranks finish together (about), so the step's forward and
// backward are the slowest rank's.
LayerStep PlannerCosts::heterogeneous_step(graph::LayerId layer, Placement placement) {
  LayerStep result;
  result.count = placement.count;
  const std::vector<int64_t>& shares = kind_shares(layer, placement);
  double slowest = -1;
  for (int i = 0; i < placement.count; ++i) {
    const int64_t share = shares[static_cast<size_t>(i)];
    if (share == 0) continue;
    const cost::LayerTime& time = kind_time(layer, kind_at_[static_cast<size_t>(placement.offset + i)], share);
    if (time.total().s() > slowest) {
      slowest = time.total().s();
      result.forward = time.forward.s();
      result.backward = time.backward.s();
    }
  }
  return result;
}

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
  if (!order_.empty()) {  // mixed: count x the slowest rank's time, over the reference one-device time
    const LayerStep step = heterogeneous_step(layer, Placement{0, count});
    return count * (step.forward + step.backward) / whole;
  }
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
  if (split->second && order_.empty()) {  // mixed: the ranks' own kinds' times stand
    step.forward = split->second->forward.s();
    step.backward = split->second->backward.s();
  }
  const int64_t channels = context_.graph.info(layer).output_shape.at(0);
  const auto sync_key = std::make_pair(static_cast<int64_t>(placement.offset) * (int64_t{1} << 31) + placement.count,
                                       channels);
  auto found = batchnorm_syncs_.find(sync_key);
  if (found == batchnorm_syncs_.end()) {
    const Bytes statistics(2.0 * static_cast<double>(channels) * 8);  // Σx and Σx² (or Σdy, Σdy·x̂), float64
    found = batchnorm_syncs_.emplace(sync_key, context_.network.allreduce(ranks(placement), statistics).s()).first;
  }
  const double sync = found->second;
  step.forward += sync;
  step.backward += sync;
}

LayerStep PlannerCosts::step(graph::LayerId layer, Placement placement) {
  LayerStep result;
  result.count = placement.count;
  const int64_t shard = (batch_ + placement.count - 1) / placement.count;
  if (order_.empty()) {
    result.forward = compute_time(layer, shard, true);
    result.backward = compute_time(layer, shard, false);
  } else {
    result = heterogeneous_step(layer, placement);
  }
  if (syncs_batchnorm(layer, placement.count)) add_batchnorm_sync(layer, placement, shard, result);
  const int64_t params = context_.graph.info(layer).params;
  if (params > 0 && placement.count > 1) {
    const auto key = std::make_pair(static_cast<int64_t>(placement.offset) * (int64_t{1} << 31) +
                                        placement.count, params);
    auto found = allreduce_.find(key);
    if (found == allreduce_.end()) {
      const Bytes gradients(static_cast<double>(params) * 4.0);  // fp32, as evaluate_plan
      found = allreduce_.emplace(key, context_.network.allreduce(ranks(placement), gradients).s()).first;
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
                                       const cost::NetworkModel& network, Bytes per_sample,
                                       const std::function<int(int)>& rank_at) {
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
    const int src_rank = rank_at(reshard.from.offset + src), dst_rank = rank_at(reshard.to.offset + dst);
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
    forward[k] = even_reshard_pieces(reshard, batch_, context_.network, per_sample,
                                     [this](int position) { return rank_at(position); });
    if (program::carries_gradient(context_.graph, reshard.producer)) backward[k] = forward[k];
    forward_ready.push_back(reshard.forward_ready_s);
    backward_ready.push_back(reshard.backward_ready_s);
  }
  return SharedTimes{serve_in_order(forward, forward_ready, false), serve_in_order(backward, backward_ready, true)};
}

double PlannerCosts::transfer(graph::LayerId producer, Placement from, Placement to) {
  if (producer < 0) return 0;
  const Bytes bytes_per_sample(static_cast<double>(context_.graph.info(producer).output_bytes));
  if (!order_.empty()) {
    // Mixed: the placements' shares depend on the layers; priced as even splits of the
    // placements' ranks (the evaluator times the real pieces).
    const SideLoads& loads = mixed_loads(from, to);
    const size_t links = link_kinds_.size();
    double busiest = 0;
    for (size_t side = 0; side * links < loads.messages.size(); ++side) {
      double time = 0;
      for (size_t link = 0; link < links; ++link) {
        const cluster::Link& kind = link_kinds_[link];
        time += loads.messages[side * links + link] * kind.latency.s() +
                loads.samples[side * links + link] * (bytes_per_sample / kind.bandwidth).s();
      }
      busiest = std::max(busiest, time);
    }
    return busiest;
  }
  if (from.offset != 0 || to.offset != 0) {
    const auto transfers = cost::reshard_transfers(even_split(ranks(from), batch_),
                                                   even_split(ranks(to), batch_));
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
