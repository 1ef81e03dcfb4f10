// Context parallelism's program (context_lift.h).
#include "context_lift.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "burst/cost/memory.h"
#include "burst/util/error.h"

namespace burst::program {

plan::Plan context_group_plan(const plan::Plan& plan) {
  plan::Plan groups = plan;
  groups.devices = plan.devices / plan.context_parallel;
  groups.context_parallel = 1;
  groups.rank_clocks_mhz.clear();  // the devices', set on the lifted program
  return groups;
}

namespace {

// A group of the context groups' program spans, on the devices, either the same context
// rank of each member (a tensor group: its members hold the same tokens) or all of them
// (gradients, weights and the loss: every token share adds to them).
enum class Spread : uint8_t { SameContextRank, AllContextRanks };

Spread spread_of(OpKind kind) {
  switch (kind) {
    case OpKind::SyncBatchNorm:
    case OpKind::TensorAllReduce:
    case OpKind::TensorReduceScatter:
    case OpKind::TensorAllGather: return Spread::SameContextRank;
    default: return Spread::AllContextRanks;
  }
}

class ContextLift {
 public:
  ContextLift(const graph::Graph& graph, const plan::Plan& plan, const ProgramOptions& options, const BuildScope& scope,
              StepProgram groups)
      : graph_(graph), plan_(plan), options_(options), c_(plan.context_parallel), groups_(std::move(groups)),
        one_rank_per_class_(scope.one_rank_per_class) {}

  StepProgram lift() && {
    lifted_.ranks = plan_.devices;
    lifted_.global_batch = groups_.global_batch;
    lifted_.micro_batches = groups_.micro_batches;
    lifted_.micro_batch = groups_.micro_batch;
    lifted_.segment_of = groups_.segment_of;
    lifted_.rank_clocks_mhz = plan_.rank_clocks_mhz;
    for (cost::TensorSplit split : groups_.splits) {
      split.context = c_;
      lifted_.splits.push_back(split);
    }
    lift_segments();
    lift_pieces();
    index_groups();
    for (Bucket bucket : groups_.buckets) {
      bucket.group = group_index(bucket.group, Spread::AllContextRanks, 0);
      lifted_.buckets.push_back(std::move(bucket));
    }
    lift_ops();
    lift_representatives();
    return std::move(lifted_);
  }

 private:
  int device(int group_rank, int k) const { return plan_.context_device(group_rank, k); }

  // Each sample group's parts stay consecutive, its context ranks one after another.
  void lift_segments() {
    for (const Segment& segment : groups_.segments) {
      Segment lifted = segment;
      lifted.shards.clear();
      const auto parts = static_cast<size_t>(segment.parts);
      for (size_t first = 0; first < segment.shards.size(); first += parts) {
        for (int k = 0; k < c_; ++k) {
          for (size_t q = first; q < first + parts; ++q) {
            lifted.shards.push_back(cost::Shard{device(segment.shards[q].rank, k), segment.shards[q].samples});
          }
        }
      }
      lifted_.segments.push_back(std::move(lifted));
    }
  }

  // Piece p becomes pieces p x C + k, between context rank k of its two groups, each with its
  // 1/C of the tokens.
  void lift_pieces() {
    for (const Piece& piece : groups_.pieces) {
      for (int k = 0; k < c_; ++k) {
        Piece lifted = piece;
        lifted.sender = device(piece.sender, k);
        lifted.receiver = device(piece.receiver, k);
        lifted.bytes = piece.bytes / c_;
        if (piece.tag != kNoTag) {
          const uint64_t tag = static_cast<uint64_t>(piece.tag) * static_cast<uint64_t>(c_) + static_cast<uint64_t>(k);
          if (tag >= kTagLimit) {
            throw UserError(fmt::format("step program: context parallelism over {} devices needs more message tags "
                                        "than the {} there are",
                                        c_, kTagLimit));
          }
          lifted.tag = static_cast<uint32_t>(tag);
        }
        lifted_.pieces.push_back(lifted);
      }
    }
  }

  std::vector<int> spread(int32_t group, Spread how, int k) const {
    std::vector<int> ranks;
    for (const int member : groups_.groups[static_cast<size_t>(group)]) {
      if (how == Spread::SameContextRank) {
        ranks.push_back(device(member, k));
      } else {
        for (int j = 0; j < c_; ++j) ranks.push_back(device(member, j));
      }
    }
    std::sort(ranks.begin(), ranks.end());
    return ranks;
  }
  std::vector<int> ring(int group_rank) const {
    std::vector<int> ranks;
    for (int k = 0; k < c_; ++k) ranks.push_back(device(group_rank, k));
    return ranks;  // ascending: context ranks are t apart
  }

  // Every group the lifted ops use, sorted: the order every rank creates them in.
  void index_groups() {
    std::set<std::vector<int>> used;
    const auto note = [&](int32_t group, Spread how) {
      if (group < 0) return;
      if (how == Spread::AllContextRanks) {
        used.insert(spread(group, how, 0));
      } else {
        for (int k = 0; k < c_; ++k) used.insert(spread(group, how, k));
      }
    };
    for (const Bucket& bucket : groups_.buckets) note(bucket.group, Spread::AllContextRanks);
    for (size_t rank = 0; rank < groups_.ops.size(); ++rank) {
      for (const Op& op : groups_.ops[rank]) {
        note(op.group, spread_of(op.kind));
        note(op.replica_group, Spread::SameContextRank);  // the same shard on each shard group
        if (rings(op)) used.insert(ring(static_cast<int>(rank)));
      }
    }
    lifted_.groups.assign(used.begin(), used.end());
    for (size_t i = 0; i < lifted_.groups.size(); ++i) index_.emplace(lifted_.groups[i], static_cast<int32_t>(i));
  }
  int32_t group_index(int32_t group, Spread how, int k) const {
    if (group < 0) return group;
    return index_.at(spread(group, how, k));
  }
  bool rings(const Op& op) const {
    return (op.kind == OpKind::Forward || op.kind == OpKind::Backward) &&
           graph_.layer(op.layer).op() == graph::OpKind::SelfAttention;
  }

  // One pass of the ring: the keys and values of this rank's tokens (and of its heads under
  // a heads split) for its samples, at the step's precision.
  int64_t ring_bytes(const Op& op, int group_rank) const {
    const Segment& segment = groups_.segments[static_cast<size_t>(op.segment)];
    const auto shard = std::find_if(segment.shards.begin(), segment.shards.end(),
                                    [group_rank](const cost::Shard& s) { return s.rank == group_rank; });
    BURST_ASSERT(shard != segment.shards.end(), "a rank runs only its segments' layers");
    const cost::TensorSplit& split = groups_.splits[static_cast<size_t>(op.layer)];
    const double heads = split.kind == cost::SplitKind::Heads ? split.parts : 1;
    const double scale = cost::value_bytes(options_.precision) / cost::kFloatBytes;
    return static_cast<int64_t>(cost::keys_values_per_sample(graph_, op.layer).value() * scale / heads / c_ *
                                static_cast<double>(shard->samples.size()));
  }
  Op ring_op(const Op& compute, int group_rank) const {
    Op ring;
    ring.kind = OpKind::ContextRing;
    ring.layer = compute.layer;
    ring.segment = compute.segment;
    ring.micro = compute.micro;
    ring.backward = compute.kind == OpKind::Backward;
    ring.group = index_.at(this->ring(group_rank));
    ring.bytes = ring_bytes(compute, group_rank);
    return ring;
  }

  Op lifted_op(const Op& op, int k) const {
    Op lifted = op;
    lifted.group = group_index(op.group, spread_of(op.kind), k);
    lifted.replica_group = group_index(op.replica_group, Spread::SameContextRank, k);
    if (op.piece >= 0) lifted.piece = op.piece * c_ + k;
    if (tensor_collective(op.kind)) lifted.bytes = op.bytes / c_;
    return lifted;
  }

  void lift_ops() {
    lifted_.ops.resize(static_cast<size_t>(lifted_.ranks));
    for (size_t rank = 0; rank < groups_.ops.size(); ++rank) {
      const int group_rank = static_cast<int>(rank);
      for (int k = 0; k < c_; ++k) {
        if (mirrors_only() && k > 0) break;  // context ranks 1.. mirror rank 0
        std::vector<Op>& ops = lifted_.ops[static_cast<size_t>(device(group_rank, k))];
        for (const Op& op : groups_.ops[rank]) {
          if (rings(op) && op.kind == OpKind::Forward) ops.push_back(ring_op(op, group_rank));
          if (rings(op) && op.kind == OpKind::Backward) {
            // Before the B and the tensor collectives that stand right before it.
            auto at = ops.end();
            while (at != ops.begin() && tensor_collective((at - 1)->kind) && (at - 1)->layer == op.layer &&
                   (at - 1)->micro == op.micro && (at - 1)->backward) {
              --at;
            }
            ops.insert(at, ring_op(op, group_rank));
          }
          ops.push_back(lifted_op(op, k));
        }
      }
    }
  }

  // Under BuildScope::one_rank_per_class context ranks 1.. mirror rank 0: only it is built.
  bool mirrors_only() const { return one_rank_per_class_; }

  void lift_representatives() {
    lifted_.representative.assign(static_cast<size_t>(lifted_.ranks), -1);
    const bool mirrors = mirrors_only();
    for (size_t rank = 0; rank < groups_.representative.size(); ++rank) {
      const int32_t stands = groups_.representative[rank];
      for (int k = 0; k < c_; ++k) {
        const int own = device(static_cast<int>(rank), k);
        lifted_.representative[static_cast<size_t>(own)] = stands < 0 ? -1 : mirrors ? device(stands, 0) : own;
      }
    }
    const bool messages = std::any_of(groups_.pieces.begin(), groups_.pieces.end(), [](const Piece& p) { return !p.local(); });
    lifted_.mirrored = groups_.mirrored || (mirrors && messages);
  }

  const graph::Graph& graph_;
  const plan::Plan& plan_;
  const ProgramOptions& options_;
  int c_;
  StepProgram groups_;
  StepProgram lifted_;
  std::map<std::vector<int>, int32_t> index_;
  bool one_rank_per_class_;
};

}  // namespace

StepProgram lift_context(const graph::Graph& graph, const plan::Plan& plan, const ProgramOptions& options,
                         const BuildScope& scope, StepProgram groups) {
  BURST_ASSERT(plan.context_parallel > 1 && groups.ranks * plan.context_parallel == plan.devices,
               "lift_context takes the program of the plan's context groups");
  return ContextLift(graph, plan, options, scope, std::move(groups)).lift();
}

}  // namespace burst::program
