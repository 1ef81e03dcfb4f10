#include "burst/timing/step_tasks.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "burst/cost/memory.h"
#include "burst/cost/power.h"
#include "burst/util/error.h"

namespace burst::timing {
namespace {

using program::OpKind;

TaskWork tensor_work(OpKind kind) {
  if (kind == OpKind::TensorReduceScatter) return TaskWork::TensorReduceScatter;
  return kind == OpKind::TensorAllGather ? TaskWork::TensorAllGather : TaskWork::TensorAllReduce;
}

// A compute task's clock on a device set to `clock_ratio` (under the options' power cap) and
// its duration there: `work_at_max` at that clock, plus the shard overhead the device's
// clock does not move (none for the update). No power model: the maximum clock.
void set_clock(Task& task, double work_at_max, double clock_ratio, const cost::PowerSpec* power,
               const TimingOptions& options) {
  // The task keeps its clock as a float; its duration is taken at that same value, so that
  // its energy (priced from the float) and its time agree exactly.
  task.clock = power == nullptr ? 1.0f
                                : static_cast<float>(cost::effective_clock(*power, task.compute_bound, clock_ratio,
                                                                           options.program.power_cap_w));
  const double clock = task.clock;
  const double overhead = task.work == TaskWork::Update ? 0.0 : options.shard_overhead.s();
  task.duration_s = (clock == 1.0 ? work_at_max : cost::clocked_time(work_at_max, task.compute_bound, clock)) + overhead;
}

// Forward and backward times of a layer's shards, asked of the cost models once per
// (layer, shard size): a layer's shards come in very few sizes, while a data-parallel step
// on 1024 ranks asks for each size 1024 times.
class ShardTimes {
 public:
  ShardTimes(const program::StepProgram& program, const PlanContext& context, const TimingOptions& options)
      : program_(program), context_(context), options_(options), times_(context.graph.size()),
        bounds_(context.graph.size()), shares_a_node_(context.graph.size(), -1) {}

  // The time of a shard of `batch` samples of layer `id` on a device of kind `kind` (an
  // index into the cluster's kinds).
  const cost::LayerTime& at(graph::LayerId id, int64_t batch, int kind) {
    auto& known = times_[static_cast<size_t>(id)];
    for (const auto& [key, time] : known) {
      if (key.first == batch && key.second == kind) return time;
    }
    known.emplace_back(std::make_pair(batch, kind), resolve(id, batch, context_.cost_of_kind(kind)));
    return known.back().second;
  }

  // The compute-bound share of a shard of `batch` samples of layer `id` on kind `kind`.
  double compute_bound(graph::LayerId id, int64_t batch, int kind) {
    auto& known = bounds_[static_cast<size_t>(id)];
    for (const auto& [key, bound] : known) {
      if (key.first == batch && key.second == kind) return bound;
    }
    const double bound = context_.cost_of_kind(kind).compute_bound_share(context_.graph, id, batch);
    known.emplace_back(std::make_pair(batch, kind), bound);
    return bound;
  }

  // One rank's optimizer step of layer `id` (all the node's ranks of a co-located layer
  // update it at once: the co-located model's update where it has one).
  // A part of a tensor split that divides the weights updates its share of them (an update
  // reads and writes each parameter once: its time goes with the parameters).
  Seconds update(graph::LayerId id, int kind) {
    return whole_update(id, context_.cost_of_kind(kind)) * part_share(id);
  }

 private:
  Seconds whole_update(graph::LayerId id, const cost::CostModel& model) {
    if (co_located(id) != nullptr) {
      if (const auto time = options_.co_located_cost->update(context_.graph, id)) return *time;
    }
    return model.update_or_zero(context_.graph, id);
  }
  // part_params / params of a divided tensor split's part, 1 otherwise.
  double part_share(graph::LayerId id) const {
    const cost::TensorSplit& split = program_.splits[static_cast<size_t>(id)];
    const int64_t params = context_.graph.info(id).params;
    if (!split.splits() || !cost::divides_weights(split.kind) || params == 0) return 1.0;
    return static_cast<double>(cost::part_params(context_.graph, id, split)) / static_cast<double>(params);
  }

  const std::vector<cost::Shard>& shards(graph::LayerId id) const {
    return program_.segments[static_cast<size_t>(program_.segment_of[static_cast<size_t>(id)])].shards;
  }

  // A BatchNorm on several ranks with synchronised statistics runs the runtime's split
  // implementation: its split time where a model has one. See lower_step_program.
  cost::LayerTime resolve(graph::LayerId id, int64_t batch, const cost::CostModel& model) {
    const graph::Graph& graph = context_.graph;
    const cost::TensorSplit& tensor = program_.splits[static_cast<size_t>(id)];
    if (tensor.splits() || tensor.divides_tokens()) {
      const cost::CostModel* co_located = this->co_located(id);
      if (co_located != nullptr) {
        if (auto estimate = co_located->estimate_tensor(graph, id, batch, tensor)) return estimate->time;
      }
      return model.require_tensor(graph, id, batch, tensor).time;
    }
    const bool split_batchnorm = options_.program.sync_batchnorm && shards(id).size() >= 2 &&
                                 graph.layer(id).op() == graph::OpKind::BatchNorm2d;
    const cost::CostModel* co_located = this->co_located(id);
    if (split_batchnorm) {
      if (co_located != nullptr) {
        if (auto split = co_located->estimate_split(graph, id, batch)) return split->time;
      }
      if (auto split = model.estimate_split(graph, id, batch)) return split->time;
    }
    if (co_located != nullptr) {
      if (auto estimate = co_located->estimate(graph, id, batch)) return estimate->time;
    }
    return model.require(graph, id, batch).time;
  }

  // The co-located model when two of layer `id`'s ranks share a node (known once per layer).
  const cost::CostModel* co_located(graph::LayerId id) {
    if (options_.co_located_cost == nullptr) return nullptr;
    int8_t& known = shares_a_node_[static_cast<size_t>(id)];
    if (known < 0) {
      const cluster::Cluster& cluster = context_.network.cluster();
      std::vector<bool> seen(static_cast<size_t>(cluster.nodes()), false);
      known = 0;
      for (const cost::Shard& shard : shards(id)) {
        const auto node = static_cast<size_t>(cluster.node_of(shard.rank));
        if (seen[node]) known = 1;
        seen[node] = true;
      }
    }
    return known == 1 ? options_.co_located_cost : nullptr;
  }

  const program::StepProgram& program_;
  const PlanContext& context_;
  const TimingOptions& options_;
  // By layer: ((shard size, kind), time).
  std::vector<std::vector<std::pair<std::pair<int64_t, int>, cost::LayerTime>>> times_;
  std::vector<std::vector<std::pair<std::pair<int64_t, int>, double>>> bounds_;  // likewise, compute-bound shares
  std::vector<int8_t> shares_a_node_;  // by layer: -1 not yet known, else 0 or 1
};

// What lowering one rank's list carries from op to op.
struct RankCursor {
  size_t shard = 0;              // where the rank's latest segment is in its shard index
  int32_t last_compute = -1;     // the rank's latest compute task
  int32_t last_collective = -1;  // the rank's latest collective (they run in program order)
  std::vector<int32_t> waits;    // what the rank's next compute task waits for
};

// Lowers the ranks' programs side by side (lower_ranks). Messages and collectives are shared
// between ranks: whichever rank meets one first creates it, the others add their
// dependencies.
class Lowering {
 public:
  Lowering(const program::StepProgram& program, const PlanContext& context, const TimingOptions& options)
      : program_(program), context_(context), options_(options), times_(program, context, options),
        devices_(context.network.cluster().size()),
        message_task_(program.pieces.size(), -1),
        bucket_task_(program.buckets.size(), -1),
        batchnorm_task_(2 * context.graph.size(), -1),
        shards_by_rank_(static_cast<size_t>(devices_)) {
    BURST_ASSERT(program.segment_of.size() == context.graph.size(), "a step program of another graph");
    step_.groups = program.groups;
    step_.first_compute.assign(static_cast<size_t>(devices_), -1);
    const cluster::Cluster& cluster = context.network.cluster();
    kind_.resize(static_cast<size_t>(devices_));
    for (int rank = 0; rank < devices_; ++rank) kind_[static_cast<size_t>(rank)] = cluster.kind_index(rank);
    set_clocks();
  }

  StepTasks run() && {
    index_shards();
    choose_representatives();
    reserve();
    lower_ranks(rank_updates());
    add_step_end();
    link();
    return std::move(step_);
  }

 private:
  // Every op makes at most one task and, joining a collective, two edges; the step's end
  // adds one edge per rank, message and collective. Reserved once: the lists of a
  // data-parallel step on thousands of ranks hold millions of entries.
  void reserve() {
    size_t ops = 0;
    for (size_t rank = 0; rank < program_.ops.size(); ++rank) {
      if (lowered(static_cast<int>(rank))) ops += program_.ops[rank].size();
    }
    step_.tasks.reserve(ops + 1);
    edges_.reserve(2 * ops + program_.ops.size());
  }

  // Per rank, (segment, shard size) of every segment it computes in, ascending segments.
  void index_shards() {
    for (size_t s = 0; s < program_.segments.size(); ++s) {
      for (const cost::Shard& shard : program_.segments[s].shards) {
        shards_by_rank_[static_cast<size_t>(shard.rank)].emplace_back(static_cast<int32_t>(s), shard.samples.size());
      }
    }
  }

  // Who stands for whom: the program's (ProgramOptions::one_rank_per_class), and how many
  // ranks each representative stands for.
  void choose_representatives() {
    BURST_ASSERT(program_.representative.size() == program_.ops.size(), "a step program without representatives");
    step_.representative.assign(static_cast<size_t>(devices_), -1);
    step_.class_size.assign(static_cast<size_t>(devices_), 0);
    for (size_t rank = 0; rank < program_.representative.size(); ++rank) {
      const int32_t representative = program_.representative[rank];
      if (representative < 0) continue;
      BURST_ASSERT(static_cast<int>(rank) < devices_, "a step program with ranks outside the cluster");
      step_.representative[rank] = representative;
      ++step_.class_size[static_cast<size_t>(representative)];
    }
  }
  bool lowered(int rank) const { return step_.representative[static_cast<size_t>(rank)] == rank; }

  // Each rank's clock ratio and power model; clocks and a power cap need a power model.
  void set_clocks() {
    clock_.assign(static_cast<size_t>(devices_), 1.0);
    power_.assign(static_cast<size_t>(devices_), nullptr);
    const double cap = options_.program.power_cap_w;
    for (int rank = 0; rank < devices_; ++rank) {
      const cost::PowerSpec* power = context_.power_of(rank);
      power_[static_cast<size_t>(rank)] = power;
      const bool clocked = !program_.rank_clocks_mhz.empty() && rank < static_cast<int>(program_.rank_clocks_mhz.size());
      if (power == nullptr) {
        if (clocked || cap > 0) {
          throw UserError(fmt::format("{} on device kind '{}', which has no power model",
                                      cap > 0 ? "a power cap" : "a clock", context_.network.cluster().kind_of(rank)));
        }
        continue;
      }
      if (cap > 0) cost::check_power_cap(*power, cap);
      if (clocked) clock_[static_cast<size_t>(rank)] = cost::clock_ratio_of(*power, program_.rank_clocks_mhz[static_cast<size_t>(rank)]);
    }
  }

  // The rank's shard size in `segment`. Its F ops visit its segments in ascending order and
  // its B ops in descending order, so the cursor moves by a step or two, not a search.
  int64_t shard_size(int rank, int32_t segment, RankCursor& cursor) const {
    const auto& shards = shards_by_rank_[static_cast<size_t>(rank)];
    size_t& at = cursor.shard;
    while (at + 1 < shards.size() && shards[at].first < segment) ++at;
    while (at > 0 && shards[at].first > segment) --at;
    BURST_ASSERT(at < shards.size() && shards[at].first == segment, "a rank computes outside its segments");
    return shards[at].second;
  }

  // Each rank's optimizer step: the updates of the layers with parameters it holds (the
  // program has an UPDATE only on ranks that hold some).
  std::vector<Seconds> rank_updates() {
    std::vector<Seconds> updates(static_cast<size_t>(devices_), Seconds(0));
    for (const program::Segment& segment : program_.segments) {
      for (const graph::LayerId id : segment.layers) {
        if (context_.graph.info(id).params == 0) continue;
        // Under ZeRO each of the layer's sample groups updates its shard of the weights.
        const double shards = options_.program.zero_stage >= 1 ? static_cast<double>(segment.shards.size() / static_cast<size_t>(segment.parts)) : 1.0;
        for (const cost::Shard& shard : segment.shards) {
          updates[static_cast<size_t>(shard.rank)] += times_.update(id, kind_[static_cast<size_t>(shard.rank)]) / shards;
        }
      }
    }
    return updates;
  }

  // The ranks' op lists side by side, a few ops of each rank in turn: tasks that run at
  // about the same time (every rank's shard of a data-parallel layer) sit close together,
  // which the simulator's event loop and the evaluator's pass read in about that order,
  // while each rank's list is still read a cache line or more at a time.
  void lower_ranks(const std::vector<Seconds>& updates) {
    constexpr size_t kOpsPerTurn = 8;
    std::vector<int> active;
    for (size_t rank = 0; rank < program_.ops.size(); ++rank) {
      if (!program_.ops[rank].empty() && lowered(static_cast<int>(rank))) active.push_back(static_cast<int>(rank));
    }
    std::vector<RankCursor> cursors(program_.ops.size());
    for (size_t begin = 0; !active.empty(); begin += kOpsPerTurn) {
      size_t kept = 0;
      for (const int rank : active) {
        const std::vector<program::Op>& ops = program_.ops[static_cast<size_t>(rank)];
        RankCursor& cursor = cursors[static_cast<size_t>(rank)];
        const size_t end = std::min(ops.size(), begin + kOpsPerTurn);
        for (size_t position = begin; position < end; ++position) {
          lower_op(rank, ops[position], updates[static_cast<size_t>(rank)], cursor);
        }
        if (end < ops.size()) {
          active[kept++] = rank;
        } else if (cursor.last_compute >= 0) {
          // What is still waited for is a message or a collective: the step's end waits for those.
          last_computes_.push_back(cursor.last_compute);
        }
      }
      active.resize(kept);
    }
  }

  void lower_op(int rank, const program::Op& op, Seconds update, RankCursor& cursor) {
    switch (op.kind) {
      case OpKind::Forward:
      case OpKind::Backward:
      case OpKind::BackwardWeight:
      case OpKind::Recompute:
        lower_compute(rank, op, cursor);
        break;
      case OpKind::SendActivation:
      case OpKind::SendGradient:
        if (cursor.last_compute >= 0) depend(cursor.last_compute, message(op.piece));
        break;
      case OpKind::RecvActivation:
      case OpKind::RecvGradient:
        if (!program_.pieces[static_cast<size_t>(op.piece)].local()) cursor.waits.push_back(message(op.piece));
        break;
      case OpKind::SyncBatchNorm:
        cursor.waits.push_back(join_collective(batchnorm_sync(op), cursor));
        break;
      case OpKind::TensorAllReduce:
      case OpKind::TensorReduceScatter:
      case OpKind::TensorAllGather:
        cursor.waits.push_back(join_collective(layer_collective(op, tensor_work(op.kind)), cursor));
        break;
      case OpKind::ContextRing:
        cursor.waits.push_back(join_collective(context_ring(rank, op, cursor), cursor));
        break;
      case OpKind::ExpertDispatch:
      case OpKind::ExpertCombine:
        cursor.waits.push_back(join_collective(expert_exchange(op), cursor));
        break;
      case OpKind::AllReduce:
      case OpKind::ReduceScatter:
        join_collective(bucket_reduction(op), cursor);
        break;
      case OpKind::AllGather:
        cursor.waits.push_back(join_collective(op.bucket >= 0 ? bucket_gather(op) : layer_collective(op, TaskWork::AllGather), cursor));
        break;
      case OpKind::WaitAllReduce:
        cursor.waits.push_back(bucket_task_[static_cast<size_t>(op.bucket)]);
        break;
      case OpKind::Update:
        // Memory-bound (SGD reads and writes every weight), no shard overhead.
        if (update.s() > 0) add_compute(rank, -1, update, 0.0, TaskWork::Update, cursor);
        break;
      case OpKind::ClipGradNorm:  // the update waits for the world's norm (one rank: nothing to sum)
        if (op.group >= 0) cursor.waits.push_back(join_collective(gradient_norm(op), cursor));
        break;
      case OpKind::ReduceLoss:  // not timed (logged steps only)
      case OpKind::WaitSends:   // the step's end waits for every message
        break;
    }
  }

  // A layer's F, B (or a split backward's B or W) or RECOMPUTE on its shard.
  void lower_compute(int rank, const program::Op& op, RankCursor& cursor) {
    const int64_t shard = shard_size(rank, op.segment, cursor);
    const cost::LayerTime time = times_.at(op.layer, shard, kind_[static_cast<size_t>(rank)]) * imbalance(op.layer);
    const double bound = compute_bound(rank, op.layer, shard);
    if (op.kind == OpKind::Recompute) {
      add_compute(rank, op.layer, time.forward * recomputed_share(op.layer), bound, TaskWork::Recompute, cursor);
    } else if (op.kind == OpKind::Forward) {
      add_compute(rank, op.layer, time.forward, bound, TaskWork::Forward, cursor);
    } else {
      add_compute(rank, op.layer, time.backward * backward_share(op), bound, TaskWork::Backward, cursor);
    }
  }

  int32_t add(const Task& task) {
    step_.tasks.push_back(task);
    return static_cast<int32_t>(step_.tasks.size() - 1);
  }
  void depend(int32_t before, int32_t after) { edges_.emplace_back(before, after); }

  double compute_bound(int rank, graph::LayerId layer, int64_t shard) {
    if (power_[static_cast<size_t>(rank)] == nullptr) return 1.0;  // not modelled: the clock stays at 1
    return times_.compute_bound(layer, shard, kind_[static_cast<size_t>(rank)]);
  }

  // A compute task on `rank` of `work_time` at the maximum clock (and the shard overhead,
  // which the device's clock does not move, except for the update), after the rank's
  // previous one and what it waits for.
  void add_compute(int rank, graph::LayerId layer, Seconds work_time, double compute_bound, TaskWork work,
                   RankCursor& cursor) {
    Task task;
    task.compute_bound = static_cast<float>(compute_bound);
    task.work = work;
    set_clock(task, work_time.s(), clock_[static_cast<size_t>(rank)], power_[static_cast<size_t>(rank)], options_);
    task.kind = TaskKind::Compute;
    task.work = work;
    task.layer = layer;
    task.rank = rank;
    const int32_t index = add(task);
    if (cursor.last_compute >= 0) {
      depend(cursor.last_compute, index);
    } else {
      step_.first_compute[static_cast<size_t>(rank)] = index;
    }
    for (const int32_t wait : cursor.waits) depend(wait, index);
    cursor.waits.clear();
    cursor.last_compute = index;
  }

  // The message task of a piece, created by whichever of its two ranks comes first.
  int32_t message(int32_t piece_index) {
    int32_t& index = message_task_[static_cast<size_t>(piece_index)];
    if (index >= 0) return index;
    const program::Piece& piece = program_.pieces[static_cast<size_t>(piece_index)];
    Task task;
    task.kind = TaskKind::Message;
    task.work = TaskWork::Message;
    task.layer = piece.consumer;
    task.rank = piece.sender;
    task.peer = piece.receiver;
    task.item = piece_index;
    task.bytes = static_cast<double>(piece.bytes);
    task.duration_s = context_.network.point_to_point(piece.sender, piece.receiver, Bytes(task.bytes)).s();
    index = add(task);
    messages_.push_back(index);
    return index;
  }

  // Expert parallelism: a moe layer's time on the busiest expert rank, its experts' share
  // of the work at ProgramOptions::moe_imbalance times the mean tokens.
  double imbalance(graph::LayerId id) const {
    if (program_.splits[static_cast<size_t>(id)].experts <= 1) return 1.0;
    return 1.0 + (options_.program.moe_imbalance - 1.0) * cost::expert_compute_share(context_.graph, id);
  }

  // What of a layer's backward a B or W runs: all of it, but a split backward's B the input
  // gradients and its W the weight gradients (cost::weight_gradient_share).
  double backward_share(const program::Op& op) const {
    if (!program_.split_backward) return 1.0;
    const double weights = cost::weight_gradient_share(context_.graph, op.layer);
    return op.kind == OpKind::BackwardWeight ? weights : 1.0 - weights;
  }

  // What of a layer's forward a RECOMPUTE runs again: all of it under full recomputation,
  // an attention's core under selective.
  double recomputed_share(graph::LayerId id) const {
    if (options_.program.recompute != cost::Recompute::Selective) return 1.0;
    return cost::attention_core_forward_share(context_.graph, id);
  }

  // A collective's task, once per step whichever member meets it first.
  int32_t collective(int32_t group, double bytes, TaskWork work, graph::LayerId layer) {
    // A reduce-scatter or an all-gather is half a ring all-reduce (network.h).
    const bool half = work == TaskWork::ReduceScatter || work == TaskWork::AllGather ||
                      work == TaskWork::TensorReduceScatter || work == TaskWork::TensorAllGather;
    auto cached = collective_time_.find({group, bytes, half});
    if (cached == collective_time_.end()) {
      const std::vector<int>& ranks = step_.groups[static_cast<size_t>(group)];
      const Seconds time = half ? context_.network.reduce_scatter(ranks, Bytes(bytes))
                                : context_.network.allreduce(ranks, Bytes(bytes));
      cached = collective_time_.emplace(std::make_tuple(group, bytes, half), time.s()).first;
    }
    Task task;
    task.kind = TaskKind::Collective;
    task.work = work;
    task.layer = layer;
    task.group = group;
    task.bytes = bytes;
    task.duration_s = cached->second;
    const int32_t index = add(task);
    collectives_.push_back(index);
    return index;
  }
  // The statistics all-reduce of a synced BatchNorm: 2 x channels float64 sums.
  int32_t batchnorm_sync(const program::Op& op) {
    int32_t& index = batchnorm_task_[2 * static_cast<size_t>(op.layer) + (op.backward ? 1 : 0)];
    if (index < 0) {
      const double channels = static_cast<double>(context_.graph.info(op.layer).output_shape.at(0));
      index = collective(op.group, 2 * channels * 8, TaskWork::BatchNormSync, op.layer);
    }
    return index;
  }
  // Gradient clipping's world sum of the squared norm, once per step.
  int32_t gradient_norm(const program::Op& op) {
    if (gradient_norm_task_ < 0) {
      gradient_norm_task_ = collective(op.group, static_cast<double>(op.bytes), TaskWork::GradNorm, -1);
    }
    return gradient_norm_task_;
  }
  // A layer's collective of one micro-batch and direction over one group: a split layer's
  // tensor all-reduce, reduce-scatter or all-gather, or ZeRO 3's gather of its weights.
  int32_t layer_collective(const program::Op& op, TaskWork work) {
    const auto key = std::make_tuple(op.layer, op.backward, op.micro, op.group, work);
    const auto found = layer_task_.find(key);
    if (found != layer_task_.end()) return found->second;
    const int32_t index = collective(op.group, static_cast<double>(op.bytes), work, op.layer);
    layer_task_.emplace(key, index);
    return index;
  }
  // Ring attention over a context group of C: C - 1 passes of a rank's keys and values to
  // its neighbour (the slowest link of the ring), each overlapped with the attention core's
  // work on the block it holds (1/C of the rank's core). What the core cannot hide is the
  // task: forward (C - 1) x max(0, pass - core / C); the backward passes keys and values and
  // their gradients (2 x the bytes) beside the backward's core, and reruns the forward's
  // ring where recomputation reruns the core.
  int32_t context_ring(int rank, const program::Op& op, RankCursor& cursor) {
    const auto key = std::make_tuple(op.layer, op.backward, op.micro, op.group, TaskWork::ContextRing);
    const auto found = layer_task_.find(key);
    if (found != layer_task_.end()) return found->second;
    const std::vector<int>& ring = step_.groups[static_cast<size_t>(op.group)];
    const double c = static_cast<double>(ring.size());
    const auto pass = [&](double bytes) {
      double slowest = 0;
      for (size_t k = 0; k < ring.size(); ++k) {
        slowest = std::max(slowest, context_.network.point_to_point(ring[k], ring[(k + 1) % ring.size()], Bytes(bytes)).s());
      }
      return slowest;
    };
    const int64_t shard = shard_size(rank, op.segment, cursor);
    const cost::LayerTime& time = times_.at(op.layer, shard, kind_[static_cast<size_t>(rank)]);
    const double core = cost::attention_core_forward_share(context_.graph, op.layer);
    const double bytes = static_cast<double>(op.bytes);
    const auto exposed = [&](double passed, double core_s) { return (c - 1) * std::max(0.0, pass(passed) - core_s / c); };
    double seconds = exposed(bytes, time.forward.s() * core);
    if (op.backward) {
      const bool reruns = options_.program.recompute != cost::Recompute::None;
      seconds = exposed(2 * bytes, time.backward.s() * core) + (reruns ? seconds : 0.0);
    }
    Task task;
    task.kind = TaskKind::Collective;
    task.work = TaskWork::ContextRing;
    task.layer = op.layer;
    task.group = op.group;
    task.bytes = bytes * (c - 1) * (op.backward ? 2 : 1);
    task.duration_s = seconds;
    const int32_t index = add(task);
    collectives_.push_back(index);
    layer_task_.emplace(key, index);
    return index;
  }
  // A moe layer's all-to-all over its expert group (network.h, all_to_all).
  int32_t expert_exchange(const program::Op& op) {
    // (the dispatch and the combine of one direction: TaskWork's two values keep them apart)
    const TaskWork work = op.kind == OpKind::ExpertDispatch ? TaskWork::ExpertDispatch : TaskWork::ExpertCombine;
    const auto key = std::make_tuple(op.layer, op.backward, op.micro, op.group, work);
    const auto found = layer_task_.find(key);
    if (found != layer_task_.end()) return found->second;
    Task task;
    task.kind = TaskKind::Collective;
    task.work = work;
    task.layer = op.layer;
    task.group = op.group;
    task.bytes = static_cast<double>(op.bytes);
    task.duration_s = context_.network.all_to_all(step_.groups[static_cast<size_t>(op.group)], Bytes(task.bytes)).s();
    const int32_t index = add(task);
    collectives_.push_back(index);
    layer_task_.emplace(key, index);
    return index;
  }
  // A bucket's all-reduce, or its reduce-scatter under ZeRO; under HSDP the reduce-scatter
  // over the rank's shard group, then the all-reduce of its shard (bytes / shard ranks) over
  // the replica group, one after the other (every shard group's run alike: one task).
  int32_t bucket_reduction(const program::Op& op) {
    int32_t& index = bucket_task_[static_cast<size_t>(op.bucket)];
    if (index < 0) {
      const program::Bucket& bucket = program_.buckets[static_cast<size_t>(op.bucket)];
      const TaskWork work = op.kind == OpKind::ReduceScatter ? TaskWork::ReduceScatter : TaskWork::Allreduce;
      const int32_t group = op.replica_group >= 0 ? op.group : bucket.group;
      index = collective(group, static_cast<double>(bucket.bytes), work, bucket.closed_by);
      Task& task = step_.tasks[static_cast<size_t>(index)];
      task.item = op.bucket;
      if (op.replica_group >= 0) {
        const std::vector<int>& shard = step_.groups[static_cast<size_t>(op.group)];
        const Bytes shard_bytes(static_cast<double>(bucket.bytes) / static_cast<double>(shard.size()));
        task.duration_s += context_.network.allreduce(step_.groups[static_cast<size_t>(op.replica_group)], shard_bytes).s();
      }
    }
    return index;
  }
  // ZeRO 1 and 2: the bucket's updated weights gathered after the update (weights move in
  // the step's precision, as its gradients: the bucket's bytes).
  int32_t bucket_gather(const program::Op& op) {
    const auto found = gather_task_.find(op.bucket);
    if (found != gather_task_.end()) return found->second;
    const program::Bucket& bucket = program_.buckets[static_cast<size_t>(op.bucket)];
    const int32_t index = collective(bucket.group, static_cast<double>(bucket.bytes), TaskWork::AllGather, bucket.closed_by);
    gather_task_.emplace(op.bucket, index);
    return index;
  }
  // A member joins: the collective waits for its latest compute and its previous collective.
  // Members mostly share the previous one and join one after another: that edge is added
  // once for them, not once per rank.
  int32_t join_collective(int32_t index, RankCursor& cursor) {
    if (cursor.last_compute >= 0) depend(cursor.last_compute, index);
    const std::pair<int32_t, int32_t> chain{cursor.last_collective, index};
    if (cursor.last_collective >= 0 && chain != last_chain_) {
      depend(cursor.last_collective, index);
      last_chain_ = chain;
    }
    cursor.last_collective = index;
    return index;
  }

  // The step ends when every rank's compute, every message and every collective is done.
  void add_step_end() {
    Task task;
    task.kind = TaskKind::StepEnd;
    task.work = TaskWork::StepEnd;
    step_.step_end = add(task);
    for (const std::vector<int32_t>* before : {&last_computes_, &messages_, &collectives_}) {
      for (const int32_t index : *before) depend(index, step_.step_end);
    }
  }

  // Edges into the compressed successor lists (in the order they were added: a task
  // releases its successors in program order), and dependency counts.
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
    // Fill each list from its start, the start itself as the cursor (it ends at the list's
    // end, the next list's start), then move the starts back one place.
    for (const auto& [before, after] : edges_) {
      step_.successors[static_cast<size_t>(step_.successor_begin[static_cast<size_t>(before)]++)] = after;
    }
    for (size_t i = count; i > 0; --i) step_.successor_begin[i] = step_.successor_begin[i - 1];
    step_.successor_begin[0] = 0;
  }

  const program::StepProgram& program_;
  const PlanContext& context_;
  const TimingOptions& options_;
  ShardTimes times_;
  int devices_;
  std::vector<int32_t> message_task_;     // by piece
  std::vector<int32_t> bucket_task_;      // by bucket
  std::vector<int32_t> batchnorm_task_;   // by layer x 2 + (backward)
  // (layer, backward, micro, group, work) -> its task: layer_collective's
  std::map<std::tuple<graph::LayerId, bool, int32_t, int32_t, TaskWork>, int32_t> layer_task_;
  std::vector<std::vector<std::pair<int32_t, int64_t>>> shards_by_rank_;
  std::vector<int> kind_;  // per rank: its device kind's index in the cluster's kinds
  std::vector<double> clock_;  // per rank: its clock ratio (1 without clocks)
  std::vector<const cost::PowerSpec*> power_;  // per rank: its kind's power model, or null
  std::vector<int32_t> last_computes_;
  std::vector<int32_t> messages_;
  std::vector<int32_t> collectives_;
  std::vector<std::pair<int32_t, int32_t>> edges_;
  std::pair<int32_t, int32_t> last_chain_{-1, -1};  // the latest collective -> collective edge
  std::map<std::tuple<int32_t, double, bool>, double> collective_time_;  // (group, bytes, half) -> seconds
  std::map<int32_t, int32_t> gather_task_;  // by bucket: its ALL_GATHER's task
  int32_t gradient_norm_task_ = -1;         // CLIP_GRAD_NORM's world sum
  StepTasks step_;
};

}  // namespace

void set_rank_clocks(StepTasks& step, const std::vector<double>& clock_ratios, const PlanContext& context,
                     const TimingOptions& options) {
  for (Task& task : step.tasks) {
    if (task.kind != TaskKind::Compute) continue;
    const cost::PowerSpec* power = context.power_of(task.rank);
    if (power == nullptr) continue;
    const double overhead = task.work == TaskWork::Update ? 0.0 : options.shard_overhead.s();
    const double work_now = task.duration_s - overhead;
    const double work_at_max = task.clock == 1.0f ? work_now : work_now / (task.compute_bound / task.clock + 1 - task.compute_bound);
    set_clock(task, work_at_max, clock_ratios[static_cast<size_t>(task.rank)], power, options);
  }
}

bool ports_may_contend(const program::StepProgram& program) {
  std::vector<char> sends(static_cast<size_t>(program.ranks), 0), receives(static_cast<size_t>(program.ranks), 0);
  for (const program::Piece& piece : program.pieces) {
    if (piece.local()) continue;
    char& send = sends[static_cast<size_t>(piece.sender)];
    char& receive = receives[static_cast<size_t>(piece.receiver)];
    if (send || receive) return true;
    send = receive = 1;
  }
  return false;
}

StepTasks lower_step_program(const program::StepProgram& program, const PlanContext& context,
                             const TimingOptions& options) {
  StepTasks step = Lowering(program, context, options).run();
  step.messages_may_wait = ports_may_contend(program);
  return step;
}

StepTasks plan_step_tasks(const plan::Plan& plan, const PlanContext& context, const TimingOptions& options,
                          program::BuildScope scope) {
  scope.reduce_loss = false;  // not timed
  const program::StepProgram program = build_step_program(context.graph, plan, options.program, scope);
  return lower_step_program(program, context, options);
}

}  // namespace burst::timing
