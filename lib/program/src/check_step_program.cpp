#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "burst/program/step_program.h"
#include "burst/program/tensor_collectives.h"
#include "burst/util/error.h"

namespace burst::program {
namespace {

// Whether `pieces` tile `want` (samples x features) exactly once: each inside it, no two
// overlapping, their areas adding up to its area.
bool tiles_once(const cost::Block& want, const std::vector<cost::Block>& pieces) {
  int64_t area = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const cost::Block& a = pieces[i];
    if (a.samples.begin < want.samples.begin || a.samples.end > want.samples.end ||
        a.features.begin < want.features.begin || a.features.end > want.features.end) {
      return false;
    }
    area += a.samples.size() * a.features.size();
    for (size_t j = 0; j < i; ++j) {
      const cost::Block& b = pieces[j];
      if (a.samples.begin < b.samples.end && b.samples.begin < a.samples.end && a.features.begin < b.features.end &&
          b.features.begin < a.features.end) {
        return false;
      }
    }
  }
  return area == want.samples.size() * want.features.size();
}

// Every receiver's block of a (consumer, input) activation, or of a (producer, use)
// gradient, is tiled exactly once (plan::input_blocks and plan::output_blocks).
void check_coverage(const StepProgram& program, const graph::Graph& graph, const plan::Plan& plan) {
  // (gradient, consumer, input, receiver, micro-batch) -> blocks received.
  std::map<std::tuple<bool, graph::LayerId, int32_t, int, int32_t>, std::vector<cost::Block>> received;
  for (const Piece& piece : program.pieces) {
    received[{piece.gradient, piece.consumer, piece.input, piece.receiver, piece.micro}].push_back(
        cost::Block{piece.receiver, piece.samples, piece.features});
  }
  int32_t micro = 0;
  // A block of a context group's rank is received by each of its C devices.
  auto check_tiles = [&](bool gradient, graph::LayerId consumer, size_t k, const cost::Block& group_want) {
    for (int context = 0; context < plan.context_parallel; ++context) {
      cost::Block want = group_want;
      want.rank = plan.context_device(group_want.rank, context);
      const auto found = received.find({gradient, consumer, static_cast<int32_t>(k), want.rank, micro});
      if (found != received.end() && tiles_once(want, found->second)) continue;
    throw UserError(fmt::format("step program: {} of layer '{}' input {} on rank {}: samples [{}, {}) x features "
                                "[{}, {}) of micro-batch {} are not received exactly once",
                                gradient ? "gradient" : "activation", graph.layer(consumer).name, k, want.rank,
                                want.samples.begin, want.samples.end, want.features.begin, want.features.end, micro));
    }
  };
  for (graph::LayerId consumer = 0; consumer < static_cast<graph::LayerId>(graph.size()); ++consumer) {
    for (size_t k = 0; k < graph.inputs(consumer).size(); ++k) {
      const graph::LayerId producer = graph.inputs(consumer)[k];
      if (program.segment_of[static_cast<size_t>(producer)] == program.segment_of[static_cast<size_t>(consumer)]) continue;
      const std::vector<cost::Block> inputs = plan::input_blocks(plan, graph, consumer, k);
      const std::vector<cost::Block> outputs = plan::output_blocks(plan, graph, producer);
      for (micro = 0; micro < program.micro_batches; ++micro) {
        for (const cost::Block& want : inputs) check_tiles(false, consumer, k, want);
        if (!carries_gradient(graph, producer)) continue;
        for (const cost::Block& want : outputs) check_tiles(true, consumer, k, want);
      }
    }
  }
}

// Tags unique; each message sent once by its sender and received once by its receiver.
void check_messages(const StepProgram& program) {
  std::set<uint32_t> tags;
  for (const Piece& piece : program.pieces) {
    if (piece.local()) continue;
    if (piece.tag >= kTagLimit || !tags.insert(piece.tag).second) {
      throw UserError(fmt::format("step program: tag {} is out of range or used twice", piece.tag));
    }
  }
  std::vector<int> sends(program.pieces.size(), 0), receives(program.pieces.size(), 0);
  for (int rank = 0; rank < program.ranks; ++rank) {
    for (const Op& op : program.ops[static_cast<size_t>(rank)]) {
      if (op.piece < 0) continue;
      const Piece& piece = program.pieces[static_cast<size_t>(op.piece)];
      const bool send = op.kind == OpKind::SendActivation || op.kind == OpKind::SendGradient;
      if ((send ? piece.sender : piece.receiver) != rank || (send && piece.local())) {
        throw UserError(fmt::format("step program: rank {} handles piece {} it is not an end of", rank, op.piece));
      }
      ++(send ? sends : receives)[static_cast<size_t>(op.piece)];
    }
  }
  for (size_t i = 0; i < program.pieces.size(); ++i) {
    if (receives[i] != 1 || sends[i] != (program.pieces[i].local() ? 0 : 1)) {
      throw UserError(fmt::format("step program: piece {} is sent {} and received {} times", i, sends[i], receives[i]));
    }
  }
}

bool runs(const StepProgram& program, int rank, graph::LayerId id) {
  const auto& shards = program.segments[static_cast<size_t>(program.segment_of[static_cast<size_t>(id)])].shards;
  return std::any_of(shards.begin(), shards.end(), [rank](const cost::Shard& shard) { return shard.rank == rank; });
}

// Whether `rank` has done every backward (of every micro-batch) that adds to `bucket`'s
// gradients: the closing layer's where it runs it; elsewhere (a rank that holds a tied embedding's weight for its
// head) the backward of each layer of the bucket it runs and of each head tied to one.
bool backward_done(const StepProgram& program, const graph::Graph& graph, int rank, const Bucket& bucket,
                   const std::vector<int>& backward) {
  const int all = static_cast<int>(program.micro_batches);
  if (runs(program, rank, bucket.closed_by)) return backward[static_cast<size_t>(bucket.closed_by)] == all;
  const auto done = [&](graph::LayerId id) { return !runs(program, rank, id) || backward[static_cast<size_t>(id)] == all; };
  for (const graph::LayerId id : bucket.layers) {
    const auto& heads = graph.tied_heads(id);
    if (!done(id) || !std::all_of(heads.begin(), heads.end(), done)) return false;
  }
  return true;
}

// Segments' ranks compute each of their layers forward and backward once per micro-batch,
// the forward first; buckets are started after their closing layer's last backward and
// waited for once, by their group only.
void check_compute_and_buckets(const StepProgram& program, const graph::Graph& graph) {
  const auto micro_batches = static_cast<size_t>(program.micro_batches);
  for (int rank = 0; rank < program.ranks; ++rank) {
    std::vector<int> forward(graph.size(), 0), backward(graph.size(), 0);
    std::vector<char> forward_done(graph.size() * micro_batches, 0);  // by (layer, micro-batch)
    std::vector<int> started(program.buckets.size(), 0), waited(program.buckets.size(), 0);
    for (const Op& op : program.ops[static_cast<size_t>(rank)]) {
      const auto at = [&] { return static_cast<size_t>(op.layer) * micro_batches + static_cast<size_t>(op.micro); };
      if (op.kind == OpKind::Forward) {
        ++forward[static_cast<size_t>(op.layer)];
        forward_done[at()] = 1;
      }
      if (op.kind == OpKind::Backward) {
        if (!forward_done[at()]) {
          throw UserError(fmt::format("step program: rank {} runs the backward of layer '{}' on micro-batch {} before "
                                      "its forward",
                                      rank, graph.layer(op.layer).name, op.micro));
        }
        ++backward[static_cast<size_t>(op.layer)];
      }
      if (op.kind == OpKind::AllReduce || op.kind == OpKind::ReduceScatter) {
        const Bucket& bucket = program.buckets[static_cast<size_t>(op.bucket)];
        if (!backward_done(program, graph, rank, bucket, backward)) {
          throw UserError(fmt::format("step program: rank {} starts bucket {} before its last layer's backward", rank,
                                      op.bucket));
        }
        ++started[static_cast<size_t>(op.bucket)];
      }
      if (op.kind == OpKind::WaitAllReduce) {
        if (started[static_cast<size_t>(op.bucket)] != 1) {
          throw UserError(fmt::format("step program: rank {} waits for bucket {} it has not started", rank, op.bucket));
        }
        ++waited[static_cast<size_t>(op.bucket)];
      }
    }
    for (size_t s = 0; s < program.segments.size(); ++s) {
      const Segment& segment = program.segments[s];
      const bool member = std::any_of(segment.shards.begin(), segment.shards.end(),
                                      [&](const cost::Shard& shard) { return shard.rank == rank; });
      const int expected = member ? static_cast<int>(micro_batches) : 0;
      for (const graph::LayerId id : segment.layers) {
        if (forward[static_cast<size_t>(id)] != expected || backward[static_cast<size_t>(id)] != expected) {
          throw UserError(fmt::format("step program: rank {} computes layer '{}' {} forward and {} backward times", rank,
                                      graph.layer(id).name, forward[static_cast<size_t>(id)], backward[static_cast<size_t>(id)]));
        }
      }
    }
    for (size_t b = 0; b < program.buckets.size(); ++b) {
      const auto& group = program.groups[static_cast<size_t>(program.buckets[b].group)];
      const int expected = std::binary_search(group.begin(), group.end(), rank) ? 1 : 0;
      if (started[b] != expected || waited[b] != expected) {
        throw UserError(fmt::format("step program: rank {} starts bucket {} {} times and waits {} times", rank, b,
                                    started[b], waited[b]));
      }
    }
  }
}

// Where a tensor collective stands: right after its layer's F or B, or (a backward gather
// or reduce-scatter of the output gradient) right before its B.
struct TensorCollectiveRun {
  graph::LayerId layer;
  OpKind kind;
  bool backward;
  bool before;  // before the compute
  int32_t micro;
  bool operator<(const TensorCollectiveRun& other) const {
    return std::tie(layer, kind, backward, before, micro) <
           std::tie(other.layer, other.kind, other.backward, other.before, other.micro);
  }
};

// Every rank of a split layer runs the tensor collectives tensor_collectives() names for
// it once per micro-batch, next to its F or B as that says, in a group of its own sample
// group's parts.
void check_tensor_collectives(const StepProgram& program, const graph::Graph& graph) {
  const SameTensorGroup same_group = program_tensor_groups(program);
  std::vector<TensorCollectives> wanted_by_layer;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    wanted_by_layer.push_back(tensor_collectives(graph, program.splits, same_group, id));
  }
  for (int rank = 0; rank < program.ranks; ++rank) {
    const std::vector<Op>& ops = program.ops[static_cast<size_t>(rank)];
    std::map<TensorCollectiveRun, int> runs;
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      if (!tensor_collective(op.kind)) continue;
      const auto& group = program.groups[static_cast<size_t>(op.group)];
      const OpKind compute = op.backward ? OpKind::Backward : OpKind::Forward;
      const auto next_to = [&](size_t at) {
        return at < ops.size() && ops[at].kind == compute && ops[at].layer == op.layer && ops[at].micro == op.micro;
      };
      const bool after = i > 0 && next_to(i - 1);
      const bool before = op.backward && next_to(i + 1);
      if (!std::binary_search(group.begin(), group.end(), rank) || !(after || before)) {
        throw UserError(fmt::format("step program: rank {} runs the {} of layer '{}' outside its group or away from "
                                    "its {}",
                                    rank, op_kind_name(op.kind), graph.layer(op.layer).name,
                                    op.backward ? "backward" : "forward"));
      }
      ++runs[{op.layer, op.kind, op.backward, !after, op.micro}];
    }
    const auto expect = [&](const Op& compute, OpKind kind, bool before) {
      const bool backward = compute.kind == OpKind::Backward;
      const auto found = runs.find({compute.layer, kind, backward, before, compute.micro});
      const int count = found == runs.end() ? 0 : found->second;
      if (count != 1) {
        throw UserError(fmt::format("step program: rank {} runs the {} {} of layer '{}' {} times", rank,
                                    backward ? "backward" : "forward", op_kind_name(kind),
                                    graph.layer(compute.layer).name, count));
      }
      runs.erase(found);
    };
    for (const Op& op : ops) {
      if (op.kind != OpKind::Forward && op.kind != OpKind::Backward) continue;
      const TensorCollectives& wanted = wanted_by_layer[static_cast<size_t>(op.layer)];
      if (op.kind == OpKind::Forward && wanted.after_forward) expect(op, *wanted.after_forward, false);
      if (op.kind == OpKind::Backward && wanted.before_backward) expect(op, *wanted.before_backward, true);
      if (op.kind == OpKind::Backward && wanted.after_backward) expect(op, *wanted.after_backward, false);
    }
    if (!runs.empty()) {
      const TensorCollectiveRun& extra = runs.begin()->first;
      throw UserError(fmt::format("step program: rank {} runs a {} of layer '{}' that its split does not call for",
                                  rank, op_kind_name(extra.kind), graph.layer(extra.layer).name));
    }
  }
}

// Clipping's norm is a world sum: every rank runs one CLIP_GRAD_NORM or none does, after
// its last gradient wait and before its UPDATE.
void check_clipping(const StepProgram& program) {
  int clipping_ranks = 0;
  for (int rank = 0; rank < program.ranks; ++rank) {
    const std::vector<Op>& ops = program.ops[static_cast<size_t>(rank)];
    const auto clip = std::find_if(ops.begin(), ops.end(), [](const Op& op) { return op.kind == OpKind::ClipGradNorm; });
    if (clip == ops.end()) continue;
    ++clipping_ranks;
    const auto is = [](OpKind kind) { return [kind](const Op& op) { return op.kind == kind; }; };
    if (std::count_if(ops.begin(), ops.end(), is(OpKind::ClipGradNorm)) != 1 ||
        std::any_of(clip, ops.end(), is(OpKind::WaitAllReduce)) ||
        std::any_of(ops.begin(), clip, is(OpKind::Update))) {
      throw UserError(fmt::format("step program: rank {} clips its gradients more than once, before a gradient "
                                  "wait or after its update", rank));
    }
  }
  if (clipping_ranks != 0 && clipping_ranks != program.ranks) {
    throw UserError(fmt::format("step program: {} of {} ranks clip their gradients (the norm is a world sum)",
                                clipping_ranks, program.ranks));
  }
}

// Context parallelism: every F and B of a self_attention layer comes with one CP_RING of its
// micro-batch and direction, over C devices with the rank among them; no other layer rings.
void check_context_rings(const StepProgram& program, const graph::Graph& graph, const plan::Plan& plan) {
  for (int rank = 0; rank < program.ranks; ++rank) {
    std::map<std::tuple<graph::LayerId, int32_t, bool>, int> rings;
    for (const Op& op : program.ops[static_cast<size_t>(rank)]) {
      if (op.kind != OpKind::ContextRing) continue;
      const std::vector<int>& group = program.groups[static_cast<size_t>(op.group)];
      if (group.size() != static_cast<size_t>(plan.context_parallel) ||
          !std::binary_search(group.begin(), group.end(), rank)) {
        throw UserError(fmt::format("step program: rank {} rings layer '{}' over ranks {}, not its {} context ranks",
                                    rank, graph.layer(op.layer).name, fmt::join(group, " "), plan.context_parallel));
      }
      ++rings[{op.layer, op.micro, op.backward}];
    }
    for (const Op& op : program.ops[static_cast<size_t>(rank)]) {
      const bool compute = op.kind == OpKind::Forward || op.kind == OpKind::Backward;
      if (!compute || plan.context_parallel == 1 || graph.layer(op.layer).op() != graph::OpKind::SelfAttention) continue;
      const auto found = rings.find({op.layer, op.micro, op.kind == OpKind::Backward});
      if (found == rings.end() || found->second != 1) {
        throw UserError(fmt::format("step program: rank {} runs the {} of layer '{}' without exactly one CP_RING", rank,
                                    op.kind == OpKind::Backward ? "backward" : "forward", graph.layer(op.layer).name));
      }
      rings.erase(found);
    }
    if (!rings.empty()) {
      throw UserError(fmt::format("step program: rank {} runs a CP_RING of layer '{}' that no attention needs", rank,
                                  graph.layer(std::get<0>(rings.begin()->first)).name));
    }
  }
}

// Expert parallelism: every F and B of a moe layer comes with one EP_DISPATCH and one
// EP_COMBINE of its micro-batch and direction, over a group with the rank in it; none
// without expert parallelism.
void check_expert_exchanges(const StepProgram& program, const graph::Graph& graph, const plan::Plan& plan) {
  for (int rank = 0; rank < program.ranks; ++rank) {
    std::map<std::tuple<graph::LayerId, int32_t, bool>, std::pair<int, int>> exchanges;  // dispatches, combines
    int computes = 0;
    for (const Op& op : program.ops[static_cast<size_t>(rank)]) {
      const bool moe = op.layer >= 0 && graph.layer(op.layer).op() == graph::OpKind::Moe;
      if (moe && plan.expert_parallel > 1 && (op.kind == OpKind::Forward || op.kind == OpKind::Backward)) ++computes;
      if (op.kind != OpKind::ExpertDispatch && op.kind != OpKind::ExpertCombine) continue;
      const std::vector<int>& group = program.groups[static_cast<size_t>(op.group)];
      if (!moe || plan.expert_parallel < 2 || !std::binary_search(group.begin(), group.end(), rank)) {
        throw UserError(fmt::format("step program: rank {} runs a {} of layer '{}' outside an expert group of its own",
                                    rank, op_kind_name(op.kind), graph.layer(op.layer).name));
      }
      auto& [dispatches, combines] = exchanges[{op.layer, op.micro, op.backward}];
      ++(op.kind == OpKind::ExpertDispatch ? dispatches : combines);
    }
    const bool paired = std::all_of(exchanges.begin(), exchanges.end(),
                                    [](const auto& entry) { return entry.second == std::make_pair(1, 1); });
    if (!paired || static_cast<int>(exchanges.size()) != computes) {
      throw UserError(fmt::format("step program: rank {} does not run one dispatch and one combine with each of its "
                                  "moe layers' {} forwards and backwards",
                                  rank, computes));
    }
  }
}

// ZB-H1: on every rank, each layer with parameters runs one W a micro-batch after its B, and
// a bucket starts after the last W of each of its layers; without the split, no W at all.
void check_weight_passes(const StepProgram& program, const graph::Graph& graph) {
  const auto micro_batches = static_cast<size_t>(program.micro_batches);
  for (int rank = 0; rank < program.ranks; ++rank) {
    std::vector<char> backward_done(graph.size() * micro_batches, 0);
    std::vector<int> weights(graph.size(), 0), backwards(graph.size(), 0);
    for (const Op& op : program.ops[static_cast<size_t>(rank)]) {
      const auto at = static_cast<size_t>(op.layer) * micro_batches + static_cast<size_t>(op.micro);
      if (op.kind == OpKind::Backward) {
        backward_done[at] = 1;
        ++backwards[static_cast<size_t>(op.layer)];
      }
      if (op.kind == OpKind::BackwardWeight && (!program.split_backward || !backward_done[at])) {
        throw UserError(fmt::format("step program: rank {} runs a W of layer '{}' on micro-batch {} {}", rank,
                                    graph.layer(op.layer).name, op.micro,
                                    program.split_backward ? "before its B" : "in a program without split backwards"));
      }
      if (op.kind == OpKind::BackwardWeight) ++weights[static_cast<size_t>(op.layer)];
      if (program.split_backward && (op.kind == OpKind::AllReduce || op.kind == OpKind::ReduceScatter)) {
        for (const graph::LayerId id : program.buckets[static_cast<size_t>(op.bucket)].layers) {
          if (weights[static_cast<size_t>(id)] != backwards[static_cast<size_t>(id)]) {
            throw UserError(fmt::format("step program: rank {} starts bucket {} before the W of layer '{}'", rank,
                                        op.bucket, graph.layer(id).name));
          }
        }
      }
    }
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
      const int expected = program.split_backward && graph.info(id).params > 0 ? backwards[static_cast<size_t>(id)] : 0;
      if (weights[static_cast<size_t>(id)] != expected) {
        throw UserError(fmt::format("step program: rank {} runs {} W of layer '{}' for {} backwards", rank,
                                    weights[static_cast<size_t>(id)], graph.layer(id).name,
                                    backwards[static_cast<size_t>(id)]));
      }
    }
  }
}

}  // namespace

void check_step_program(const StepProgram& program, const graph::Graph& graph, const plan::Plan& plan) {
  for (size_t rank = 0; rank < program.representative.size(); ++rank) {
    const int32_t representative = program.representative[rank];
    BURST_ASSERT(representative < 0 || static_cast<size_t>(representative) == rank,
                 "check_step_program needs every rank's ops (a program built without one_rank_per_class)");
  }
  check_coverage(program, graph, plan);
  check_messages(program);
  check_compute_and_buckets(program, graph);
  check_tensor_collectives(program, graph);
  check_clipping(program);
  check_context_rings(program, graph, plan);
  check_weight_passes(program, graph);
  check_expert_exchanges(program, graph, plan);
}

}  // namespace burst::program
