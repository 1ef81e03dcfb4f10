#include <fmt/format.h>
#include <fmt/ranges.h>

#include "burst/program/step_program.h"

namespace burst::program {

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::RecvActivation: return "RECV_F";
    case OpKind::SendActivation: return "SEND_F";
    case OpKind::Forward: return "F";
    case OpKind::SyncBatchNorm: return "SYNC_BN";
    case OpKind::TensorAllReduce: return "TP_ALLREDUCE";
    case OpKind::RecvGradient: return "RECV_B";
    case OpKind::SendGradient: return "SEND_B";
    case OpKind::Backward: return "B";
    case OpKind::AllReduce: return "ALLREDUCE";
    case OpKind::WaitAllReduce: return "WAIT_ALLREDUCE";
    case OpKind::Update: return "UPDATE";
    case OpKind::ReduceLoss: return "REDUCE_LOSS";
    case OpKind::WaitSends: return "WAIT_SENDS";
    case OpKind::Recompute: return "RECOMPUTE";
    case OpKind::ReduceScatter: return "REDUCE_SCATTER";
    case OpKind::AllGather: return "ALL_GATHER";
    case OpKind::ClipGradNorm: return "CLIP_GRAD_NORM";
    case OpKind::TensorReduceScatter: return "TP_REDUCE_SCATTER";
    case OpKind::TensorAllGather: return "TP_ALL_GATHER";
    case OpKind::ContextRing: return "CP_RING";
    case OpKind::BackwardWeight: return "W";
    case OpKind::ExpertDispatch: return "EP_DISPATCH";
    case OpKind::ExpertCombine: return "EP_COMBINE";
  }
  return "?";
}

namespace {

std::string samples_text(const cost::SampleRange& range) { return fmt::format("[{}, {})", range.begin, range.end); }

// A piece's features when they are not all of the producer's ("[0, 8) f[4, 8)").
std::string features_text(const graph::Graph& graph, const Piece& piece) {
  if (piece.features.begin == 0 && piece.features.end == cost::output_features(graph, piece.producer)) return "";
  return fmt::format(" f[{}, {})", piece.features.begin, piece.features.end);
}

// " column 1/4": a split layer's kind and this rank's part.
std::string part_text(const StepProgram& program, int32_t segment, graph::LayerId layer, int rank) {
  const cost::TensorSplit& split = program.splits[static_cast<size_t>(layer)];
  if (!split.splits()) return "";
  const auto& shards = program.segments[static_cast<size_t>(segment)].shards;
  for (size_t i = 0; i < shards.size(); ++i) {
    if (shards[i].rank == rank) {
      return fmt::format(" {} {}/{}", cost::split_kind_name(split.kind), i % static_cast<size_t>(split.parts), split.parts);
    }
  }
  return "";
}

const cost::SampleRange& shard_of(const StepProgram& program, int32_t segment, int rank) {
  for (const cost::Shard& shard : program.segments[static_cast<size_t>(segment)].shards) {
    if (shard.rank == rank) return shard.samples;
  }
  static const cost::SampleRange none;  // unreachable for a checked program
  return none;
}

// "2RECV_F0  relu1 -> pool1.0 [4, 8) from r1, tag 3, 3136 B"; local pieces read COPY_F/COPY_B.
std::string piece_text(const StepProgram& program, const graph::Graph& graph, const Op& op) {
  const Piece& piece = program.pieces[static_cast<size_t>(op.piece)];
  const bool send = op.kind == OpKind::SendActivation || op.kind == OpKind::SendGradient;
  // The segment of the layer whose work the op belongs to: the rank's own side of the edge.
  const graph::LayerId own = (send != piece.gradient) ? piece.producer : piece.consumer;
  std::string kind = op_kind_name(op.kind);
  if (piece.local()) kind = piece.gradient ? "COPY_B" : "COPY_F";
  std::string text = fmt::format("{}{}{}  {} -> {}.{} {}{}", program.segment_of[static_cast<size_t>(own)], kind,
                                 piece.micro, graph.layer(piece.producer).name, graph.layer(piece.consumer).name, piece.input,
                                 samples_text(piece.samples), features_text(graph, piece));
  if (piece.local()) return text;
  return text + fmt::format(" {} r{}, tag {}, {} B", send ? "to" : "from", send ? piece.receiver : piece.sender,
                            piece.tag, piece.bytes);
}

std::string op_text(const StepProgram& program, const graph::Graph& graph, int rank, const Op& op) {
  switch (op.kind) {
    case OpKind::AllGather:
      if (op.bucket < 0) {
        return fmt::format("{}ALL_GATHER_{}{}  {} ranks {}, {} B", op.segment, op.backward ? "B" : "F", op.micro,
                           graph.layer(op.layer).name, program.groups[static_cast<size_t>(op.group)], op.bytes);
      }
      [[fallthrough]];
    case OpKind::AllReduce:
    case OpKind::ReduceScatter:
    case OpKind::WaitAllReduce: {
      const Bucket& bucket = program.buckets[static_cast<size_t>(op.bucket)];
      std::vector<std::string> names;
      for (const graph::LayerId id : bucket.layers) names.push_back(graph.layer(id).name);
      return fmt::format("{} b{}  ranks {}, {} B: {}", op_kind_name(op.kind), op.bucket,
                         program.groups[static_cast<size_t>(bucket.group)], bucket.bytes, fmt::join(names, " "));
    }
    case OpKind::Forward:
    case OpKind::Backward:
    case OpKind::BackwardWeight:
    case OpKind::Recompute:
      return fmt::format("{}{}{}  {} {}{}", op.segment, op_kind_name(op.kind), op.micro, graph.layer(op.layer).name,
                         samples_text(shard_of(program, op.segment, rank)), part_text(program, op.segment, op.layer, rank));
    case OpKind::TensorAllReduce:
    case OpKind::TensorReduceScatter:
    case OpKind::TensorAllGather:
    case OpKind::ContextRing:
    case OpKind::ExpertDispatch:
    case OpKind::ExpertCombine:
      return fmt::format("{}{}_{}{}  {} ranks {}, {} B", op.segment, op_kind_name(op.kind), op.backward ? "B" : "F",
                         op.micro, graph.layer(op.layer).name, program.groups[static_cast<size_t>(op.group)], op.bytes);
    case OpKind::SyncBatchNorm:
      return fmt::format("{}SYNC_BN_{}{}  {} ranks {}", program.segment_of[static_cast<size_t>(op.layer)],
                         op.backward ? "B" : "F", op.micro, graph.layer(op.layer).name,
                         program.groups[static_cast<size_t>(op.group)]);
    case OpKind::ClipGradNorm:
      return op.group >= 0 ? fmt::format("CLIP_GRAD_NORM  ranks {}, {} B", program.groups[static_cast<size_t>(op.group)], op.bytes)
                           : std::string("CLIP_GRAD_NORM");
    case OpKind::Update:
    case OpKind::ReduceLoss:
    case OpKind::WaitSends:
      return op_kind_name(op.kind);
    default:
      return piece_text(program, graph, op);
  }
}

}  // namespace

std::string format_rank_program(const StepProgram& program, const graph::Graph& graph, int rank) {
  const std::vector<Op>& ops = program.ops.at(static_cast<size_t>(rank));
  std::string text = fmt::format("rank {}: {} ops\n", rank, ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    text += fmt::format("{:>5}  {}\n", i, op_text(program, graph, rank, ops[i]));
  }
  return text;
}

}  // namespace burst::program
