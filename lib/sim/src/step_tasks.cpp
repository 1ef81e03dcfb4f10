#include "step_tasks.h"

#include <algorithm>
#include <map>
#include <utility>

#include "burst/util/error.h"

namespace burst::sim::detail {
namespace {

// Gradients flow back into a producer only when its output is a float activation that is
// not the data itself (the runtime's rule: no gradient messages into Input layers).
bool carries_gradient(const graph::Graph& graph, graph::LayerId producer) {
  return graph.layer(producer).op() != graph::OpKind::Input &&
         graph.info(producer).output_dtype == graph::DType::Float32;
}

bool same_placement(const plan::LayerPlacement& a, const plan::LayerPlacement& b) {
  return std::equal(a.shards.begin(), a.shards.end(), b.shards.begin(), b.shards.end(),
                    [](const cost::Shard& x, const cost::Shard& y) {
                      return x.rank == y.rank && x.samples == y.samples;
                    });
}

std::vector<int> ranks_of(const plan::LayerPlacement& placement) {
  std::vector<int> ranks;
  for (const cost::Shard& shard : placement.shards) ranks.push_back(shard.rank);
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

class StepBuilder {
 public:
  StepBuilder(const plan::Plan& plan, const plan::PlanContext& context, const SimOptions& options)
      : plan_(plan),
        graph_(context.graph),
        context_(context),
        batchnorm_(options.batchnorm),
        shard_overhead_(options.shard_overhead),
        co_located_cost_(options.co_located_cost),
        shares_a_node_(graph_.size(), -1),
        devices_(context.network.cluster().size()),
        times_(graph_.size()),
        forward_task_(graph_.size() * static_cast<size_t>(devices_), -1),
        backward_task_(graph_.size() * static_cast<size_t>(devices_), -1),
        last_compute_(static_cast<size_t>(devices_), -1),
        gate_(static_cast<size_t>(devices_), -1) {
    BURST_ASSERT(plan.layers.size() == graph_.size(), "simulate needs a validated plan");
    step_.first_compute.assign(static_cast<size_t>(devices_), -1);
  }

  StepTasks build() && {
    const auto layer_count = static_cast<graph::LayerId>(graph_.size());
    for (graph::LayerId id = 0; id < layer_count; ++id) add_forward(id);
    for (graph::LayerId id = layer_count - 1; id >= 0; --id) add_backward(id);
    add_updates();
    add_step_end();
    link();
    return std::move(step_);
  }

 private:
  // A shard's time, asked of the cost models once per (layer, shard size): a layer's shards
  // come in very few sizes, while a data-parallel step on 1024 ranks asks for each 1024 times.
  const cost::LayerTime& shard_time(graph::LayerId id, int64_t batch) {
    auto& known = times_[static_cast<size_t>(id)];
    for (const auto& [size, time] : known) {
      if (size == batch) return time;
    }
    known.emplace_back(batch, resolve_shard_time(id, batch));
    return known.back().second;
  }

  // A BatchNorm layer on several ranks with synchronised statistics runs the runtime's split
  // implementation: its split time where a cost model has one. A layer with two or more ranks
  // on one node takes the co-located cost model's times where given. In order: co-located
  // split, split, co-located, the context's time.
  cost::LayerTime resolve_shard_time(graph::LayerId id, int64_t batch) {
    const plan::LayerPlacement& placement = plan_.layers[static_cast<size_t>(id)];
    const bool split_batchnorm = batchnorm_ == BatchNormMode::Sync && placement.shards.size() >= 2 &&
                                 graph_.layer(id).op() == graph::OpKind::BatchNorm2d;
    const cost::CostModel* co_located = co_located_cost_ != nullptr && shares_a_node(id) ? co_located_cost_ : nullptr;
    if (split_batchnorm) {
      if (co_located != nullptr) {
        if (auto split = co_located->estimate_split(graph_, id, batch)) return split->time;
      }
      if (auto split = context_.cost.estimate_split(graph_, id, batch)) return split->time;
    }
    if (co_located != nullptr) {
      if (auto estimate = co_located->estimate(graph_, id, batch)) return estimate->time;
    }
    return context_.cost.require(graph_, id, batch).time;
  }

  // Whether two of layer `id`'s ranks are on one node (computed once per layer).
  bool shares_a_node(graph::LayerId id) {
    int8_t& known = shares_a_node_[static_cast<size_t>(id)];
    if (known < 0) {
      const cluster::Cluster& cluster = context_.network.cluster();
      std::vector<bool> seen(static_cast<size_t>(cluster.nodes()), false);
      known = 0;
      for (const cost::Shard& shard : plan_.layers[static_cast<size_t>(id)].shards) {
        const auto node = static_cast<size_t>(cluster.node_of(shard.rank));
        if (seen[node]) known = 1;
        seen[node] = true;
      }
    }
    return known == 1;
  }

  int32_t add(const Task& task) {
    step_.tasks.push_back(task);
    return static_cast<int32_t>(step_.tasks.size() - 1);
  }
  void depend(int32_t before, int32_t after) { edges_.emplace_back(before, after); }

  int32_t& forward_task(graph::LayerId id, int rank) {
    return forward_task_[static_cast<size_t>(id) * static_cast<size_t>(devices_) + static_cast<size_t>(rank)];
  }
  int32_t& backward_task(graph::LayerId id, int rank) {
    return backward_task_[static_cast<size_t>(id) * static_cast<size_t>(devices_) + static_cast<size_t>(rank)];
  }

  // A compute task on `rank`, after the rank's previous one and any collective it waits on.
  int32_t add_compute(graph::LayerId id, int rank, Seconds duration, EventKind kind) {
    Task task;
    task.duration_s = (duration + shard_overhead_).s();
    task.kind = TaskKind::Compute;
    task.event = kind;
    task.layer = id;
    task.rank = rank;
    const int32_t index = add(task);
    int32_t& last = last_compute_[static_cast<size_t>(rank)];
    if (last >= 0) {
      depend(last, index);
    } else {
      step_.first_compute[static_cast<size_t>(rank)] = index;
    }
    last = index;
    int32_t& gate = gate_[static_cast<size_t>(rank)];
    if (gate >= 0) {
      depend(gate, index);
      gate = -1;
    }
    return index;
  }

  int32_t add_message(graph::LayerId layer, int sender, int receiver, double bytes) {
    Task task;
    task.kind = TaskKind::Message;
    task.event = EventKind::Message;
    task.layer = layer;
    task.rank = sender;
    task.peer = receiver;
    task.bytes = bytes;
    task.duration_s = context_.network.point_to_point(sender, receiver, Bytes(bytes)).s();
    return add(task);
  }

  int32_t add_collective(graph::LayerId layer, std::vector<int> ranks, double bytes, EventKind kind) {
    auto [found, inserted] = group_index_.emplace(std::move(ranks), static_cast<int32_t>(step_.groups.size()));
    if (inserted) step_.groups.push_back(found->first);
    const std::vector<int>& group = found->first;
    auto cached = collective_time_.find({found->second, bytes});
    if (cached == collective_time_.end()) {
      cached = collective_time_.emplace(std::make_pair(found->second, bytes),
                                        context_.network.allreduce(group, Bytes(bytes)).s()).first;
    }
    Task task;
    task.kind = TaskKind::Collective;
    task.event = kind;
    task.layer = layer;
    task.group = found->second;
    task.bytes = bytes;
    task.duration_s = cached->second;
    const int32_t index = add(task);
    collectives_.push_back(index);
    return index;
  }

  // Split BatchNorm: the layer's ranks all-reduce 2 x channels float64 statistics and wait
  // for it before their next shard.
  void add_batchnorm_sync(graph::LayerId id, bool forward) {
    const plan::LayerPlacement& placement = plan_.layers[static_cast<size_t>(id)];
    if (batchnorm_ != BatchNormMode::Sync || placement.shards.size() < 2 ||
        graph_.layer(id).op() != graph::OpKind::BatchNorm2d) {
      return;
    }
    const double channels = static_cast<double>(graph_.info(id).output_shape.at(0));
    const int32_t sync = add_collective(id, ranks_of(placement), 2 * channels * 8, EventKind::BatchNormSync);
    for (const cost::Shard& shard : placement.shards) {
      depend(forward ? forward_task(id, shard.rank) : backward_task(id, shard.rank), sync);
      gate_[static_cast<size_t>(shard.rank)] = sync;
    }
  }

  // The messages of one use of `producer`'s output by `consumer`, one per non-local piece.
  // Forward: from the producer's shard on the piece's source rank to the consumer's shard on
  // its destination. Backward (the gradient): the reverse, between their backward shards.
  void add_reshard_messages(graph::LayerId producer, graph::LayerId consumer,
                            const std::vector<cost::Transfer>& pieces, bool backward) {
    const double bytes_per_sample = static_cast<double>(graph_.info(producer).output_bytes);
    for (const cost::Transfer& piece : pieces) {
      if (piece.local()) continue;
      const double bytes = bytes_per_sample * static_cast<double>(piece.samples.size());
      const int32_t message = backward ? add_message(consumer, piece.dst_rank, piece.src_rank, bytes)
                                       : add_message(consumer, piece.src_rank, piece.dst_rank, bytes);
      depend(backward ? backward_task(consumer, piece.dst_rank) : forward_task(producer, piece.src_rank), message);
      depend(message, backward ? backward_task(producer, piece.src_rank) : forward_task(consumer, piece.dst_rank));
      messages_.push_back(message);
    }
  }

  void add_forward(graph::LayerId id) {
    const plan::LayerPlacement& placement = plan_.layers[static_cast<size_t>(id)];
    for (const cost::Shard& shard : placement.shards) {
      forward_task(id, shard.rank) =
          add_compute(id, shard.rank, shard_time(id, shard.samples.size()).forward, EventKind::Forward);
    }
    // One message per non-local piece, per input position (a layer may read a producer twice).
    for (const graph::LayerId producer : graph_.inputs(id)) {
      if (same_placement(plan_.layers[static_cast<size_t>(producer)], placement)) continue;
      add_reshard_messages(producer, id, plan::activation_transfers(plan_, producer, id), false);
    }
    add_batchnorm_sync(id, true);
  }

  void add_backward(graph::LayerId id) {
    const plan::LayerPlacement& placement = plan_.layers[static_cast<size_t>(id)];
    for (const cost::Shard& shard : placement.shards) {
      backward_task(id, shard.rank) =
          add_compute(id, shard.rank, shard_time(id, shard.samples.size()).backward, EventKind::Backward);
    }
    // Gradients of our output come back from each consumer's ranks, the forward pieces reversed.
    if (carries_gradient(graph_, id)) {
      for (const graph::LayerId consumer : graph_.consumers(id)) {
        if (same_placement(plan_.layers[static_cast<size_t>(consumer)], placement)) continue;
        const std::vector<cost::Transfer> pieces = plan::activation_transfers(plan_, id, consumer);
        for (const graph::LayerId input : graph_.inputs(consumer)) {
          if (input == id) add_reshard_messages(id, consumer, pieces, true);
        }
      }
    }
    add_batchnorm_sync(id, false);
    const std::vector<int> group = plan::sync_group(plan_, graph_, id);
    if (!group.empty()) {
      const int32_t allreduce = add_collective(id, group, static_cast<double>(graph_.info(id).params) * 4.0,
                                               EventKind::Allreduce);  // fp32 gradients
      for (const int rank : group) depend(backward_task(id, rank), allreduce);
    }
  }

  // Each rank's optimizer step: the update of all its layers, once its last compute, the
  // messages it sent and its collectives are done (the runtime waits for those first).
  void add_updates() {
    std::vector<Seconds> update(static_cast<size_t>(devices_), Seconds(0));
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph_.size()); ++id) {
      std::optional<Seconds> co_located;  // all the node's ranks of the layer update it at once
      if (co_located_cost_ != nullptr && shares_a_node(id)) co_located = co_located_cost_->update(graph_, id);
      const Seconds layer_update = co_located ? *co_located : context_.cost.update_or_zero(graph_, id);
      for (const cost::Shard& shard : plan_.layers[static_cast<size_t>(id)].shards) {
        update[static_cast<size_t>(shard.rank)] += layer_update;
      }
    }
    std::vector<int32_t> update_task(static_cast<size_t>(devices_), -1);
    for (int rank = 0; rank < devices_; ++rank) {
      if (!(update[static_cast<size_t>(rank)].s() > 0)) continue;
      const int32_t task = add_compute(-1, rank, Seconds(0), EventKind::Update);
      step_.tasks[static_cast<size_t>(task)].duration_s = update[static_cast<size_t>(rank)].s();  // no per-shard overhead
      update_task[static_cast<size_t>(rank)] = task;
    }
    for (const int32_t message : messages_) {
      const int32_t task = update_task[static_cast<size_t>(step_.tasks[static_cast<size_t>(message)].rank)];
      if (task >= 0) depend(message, task);
    }
    for (const int32_t collective : collectives_) {
      for (const int rank : step_.groups[static_cast<size_t>(step_.tasks[static_cast<size_t>(collective)].group)]) {
        const int32_t task = update_task[static_cast<size_t>(rank)];
        if (task >= 0) depend(collective, task);
      }
    }
  }

  // The step ends when every rank's compute, messages and collectives are done.
  void add_step_end() {
    Task task;
    task.kind = TaskKind::StepEnd;
    step_.step_end = add(task);
    for (const int32_t last : last_compute_) {
      if (last >= 0) depend(last, step_.step_end);
    }
    for (const int32_t gate : gate_) {  // a BatchNorm sync after a rank's last shard
      if (gate >= 0) depend(gate, step_.step_end);
    }
    for (const int32_t message : messages_) depend(message, step_.step_end);
    for (const int32_t collective : collectives_) depend(collective, step_.step_end);
  }

  // Edges into the compressed successor lists, and dependency counts.
  void link() {
    const size_t count = step_.tasks.size();
    step_.successor_begin.assign(count + 1, 0);
    step_.dependency_count.assign(count, 0);
    for (const auto& [before, after] : edges_) {
      ++step_.successor_begin[static_cast<size_t>(before) + 1];
      ++step_.dependency_count[static_cast<size_t>(after)];
    }
    for (size_t i = 0; i < count; ++i) step_.successor_begin[i + 1] += step_.successor_begin[i];
    step_.successors.resize(edges_.size());
    std::vector<int32_t> fill(step_.successor_begin.begin(), step_.successor_begin.end() - 1);
    for (const auto& [before, after] : edges_) {
      step_.successors[static_cast<size_t>(fill[static_cast<size_t>(before)]++)] = after;
    }
  }

  const plan::Plan& plan_;
  const graph::Graph& graph_;
  const plan::PlanContext& context_;
  BatchNormMode batchnorm_;
  Seconds shard_overhead_;
  const cost::CostModel* co_located_cost_;
  std::vector<int8_t> shares_a_node_;  // per layer: -1 not yet known, else 0 or 1
  int devices_;
  std::vector<std::vector<std::pair<int64_t, cost::LayerTime>>> times_;
  std::vector<int32_t> forward_task_;   // [layer x devices + rank]
  std::vector<int32_t> backward_task_;  // [layer x devices + rank]
  std::vector<int32_t> last_compute_;   // per rank
  std::vector<int32_t> gate_;           // per rank: a collective its next shard waits for
  std::vector<int32_t> messages_;
  std::vector<int32_t> collectives_;
  std::vector<std::pair<int32_t, int32_t>> edges_;
  std::map<std::vector<int>, int32_t> group_index_;
  std::map<std::pair<int32_t, double>, double> collective_time_;
  StepTasks step_;
};

}  // namespace

StepTasks build_step_tasks(const plan::Plan& plan, const plan::PlanContext& context, const SimOptions& options) {
  return StepBuilder(plan, context, options).build();
}

}  // namespace burst::sim::detail
