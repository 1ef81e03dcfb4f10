// Tensor splits in plans: which ops take which split, and the blocks of each layer's input
// and output that its shards hold (plan.h; cost/tensor_split.h for the kinds).
#include <algorithm>

#include <fmt/format.h>

#include "burst/plan/plan.h"
#include "burst/util/error.h"

namespace burst::plan {
using cost::output_features;

bool has_tied_weights(const graph::Graph& graph, graph::LayerId id) {
  const graph::LayerSpec& layer = graph.layer(id);
  if (layer.op() == graph::OpKind::Linear && !std::get<graph::LinearAttrs>(layer.attrs).tied_to.empty()) return true;
  return !graph.tied_heads(id).empty();
}

std::string weight_split_refusal(const graph::Graph& graph, graph::LayerId id) {
  if (has_tied_weights(graph, id)) return "its weight is tied to another layer's, and tied weights take no tensor split";
  const auto* linear = std::get_if<graph::LinearAttrs>(&graph.layer(id).attrs);
  if (linear != nullptr && linear->weight_in_out) {
    return "its weight is held [in, out] (Hugging Face's Conv1D), which takes no tensor split yet";
  }
  return "";
}

namespace {

using cost::SplitKind;
using graph::OpKind;

// Why a split of `kind` (features, sequence: slices of an input kept as they are) cannot take
// layer `id`'s inputs, or "" when each has the output's shape.
std::string inputs_of_output_shape(const graph::Graph& graph, graph::LayerId id, SplitKind kind) {
  const graph::Shape& shape = graph.info(id).output_shape;
  for (const graph::LayerId producer : graph.inputs(id)) {
    if (graph.info(producer).output_shape != shape) {
      return fmt::format("a {} split needs inputs of its output's shape {}, but '{}' gives {}", cost::split_kind_name(kind),
                         graph::shape_to_string(shape), graph.layer(producer).name,
                         graph::shape_to_string(graph.info(producer).output_shape));
    }
  }
  return "";
}

// Why the loss `id` cannot take a row split (the vocabulary-parallel cross-entropy: each part
// its slice of the logits, the per-token maxima and sums all-reduced), or "" when it can:
// it needs per-token logits [T, V].
std::string vocabulary_parallel_refusal(const graph::Graph& graph, graph::LayerId id) {
  const graph::Shape& logits = graph.info(graph.inputs(id).at(0)).output_shape;
  if (logits.size() == 2) return "";
  return fmt::format("a row split of the loss divides per-token logits [T, V], but '{}' gives {}",
                     graph.layer(graph.inputs(id).at(0)).name, graph::shape_to_string(logits));
}

// Why layer `id`'s op cannot take `kind`, or "" when it can.
std::string refusal(const graph::Graph& graph, graph::LayerId id, SplitKind kind) {
  const OpKind op = graph.layer(id).op();
  const std::string name = graph::op_name(op);
  if (kind == SplitKind::Samples) return "";
  if (std::string why = weight_split_refusal(graph, id); !why.empty()) return why;
  switch (kind) {
    case SplitKind::Row:
      if (op == OpKind::SoftmaxCrossEntropy) return vocabulary_parallel_refusal(graph, id);
      [[fallthrough]];
    case SplitKind::Column:
      return op == OpKind::Linear ? "" : fmt::format("a {} split is for linear layers, not {}", cost::split_kind_name(kind), name);
    case SplitKind::Heads:
      return op == OpKind::SelfAttention ? "" : fmt::format("a heads split is for self_attention, not {}", name);
    case SplitKind::Features:
      if (!cost::element_wise(op)) {
        return fmt::format("a features split keeps its input's feature slices, but {} needs whole features "
                           "(place it as samples or replicate: the re-shard to whole features is then derived)",
                           name);
      }
      return inputs_of_output_shape(graph, id, kind);
    case SplitKind::Sequence:
      if (!cost::element_wise(op) && op != OpKind::LayerNorm) {
        return fmt::format("a sequence split is for element-wise layers and norms, which work token by token, not {}",
                           name);
      }
      if (graph.info(id).output_shape.size() < 2) {
        return fmt::format("a sequence split needs tokens [T, D], but its output is {}",
                           graph::shape_to_string(graph.info(id).output_shape));
      }
      return inputs_of_output_shape(graph, id, kind);
    case SplitKind::Replicate:
      return op == OpKind::BatchNorm2d ? "BatchNorm's statistics cannot be replicated across a tensor group" : "";
    case SplitKind::Samples: return "";
  }
  return "";
}

}  // namespace

std::string tensor_split_refusal(const graph::Graph& graph, graph::LayerId id, const cost::TensorSplit& split) {
  const char* kind = cost::split_kind_name(split.kind);
  if (const std::string why = refusal(graph, id, split.kind); !why.empty()) {
    return fmt::format("cannot take a {} split: {}", kind, why);
  }
  const auto [what, count] = cost::divided_units(graph, id, split.kind);
  if (count > 0 && split.parts > 0 && count % split.parts != 0) {
    return fmt::format("a {}-way {} split does not divide its {} {}", split.parts, kind, count, what);
  }
  return "";
}

void validate_tensor_split(const LayerPlacement& placement, const graph::Graph& graph, graph::LayerId id) {
  const cost::TensorSplit& split = placement.split;
  const std::string where =
      fmt::format("plan layer '{}' ({})", placement.layer, graph::op_name(graph.layer(id).op()));
  const char* kind = cost::split_kind_name(split.kind);
  if (split.kind == SplitKind::Samples ? split.parts != 1 : split.parts < 2) {
    throw UserError(fmt::format("{}: a {} split takes {}, got {} parts", where, kind,
                                split.kind == SplitKind::Samples ? "1 part" : "2 parts or more", split.parts));
  }
  if (const std::string why = tensor_split_refusal(graph, id, split); !why.empty()) {
    throw UserError(fmt::format("{}: {}", where, why));
  }
  const auto parts = static_cast<size_t>(split.parts);
  if (placement.shards.size() % parts != 0) {
    throw UserError(fmt::format("{}: {} shards do not make sample groups of {} parts", where, placement.shards.size(),
                                split.parts));
  }
  for (size_t i = 0; i < placement.shards.size(); ++i) {
    const cost::SampleRange& first = placement.shards[i - i % parts].samples;
    if (placement.shards[i].samples != first) {
      throw UserError(fmt::format("{}: rank {} (part {}) holds samples [{}, {}), but its group's part 0 holds [{}, {})",
                                  where, placement.shards[i].rank, i % parts, placement.shards[i].samples.begin,
                                  placement.shards[i].samples.end, first.begin, first.end));
    }
  }
}

bool has_tensor_split(const Plan& plan) {
  return std::any_of(plan.layers.begin(), plan.layers.end(),
                     [](const LayerPlacement& placement) { return placement.split.splits(); });
}

namespace {

std::vector<cost::Block> blocks(const LayerPlacement& placement, int64_t features, bool sliced) {
  std::vector<cost::Block> out;
  out.reserve(placement.shards.size());
  for (size_t i = 0; i < placement.shards.size(); ++i) {
    const cost::Shard& shard = placement.shards[i];
    const cost::FeatureRange range = sliced ? cost::feature_slice(features, placement.part_of(i), placement.split.parts)
                                            : cost::FeatureRange{0, features};
    out.push_back(cost::Block{shard.rank, shard.samples, range});
  }
  return out;
}

}  // namespace

std::vector<cost::Block> output_blocks(const Plan& plan, const graph::Graph& graph, graph::LayerId layer) {
  const LayerPlacement& placement = plan.layers.at(static_cast<size_t>(layer));
  return blocks(placement, output_features(graph, layer), cost::output_sliced(placement.split.kind));
}

std::vector<cost::Block> input_blocks(const Plan& plan, const graph::Graph& graph, graph::LayerId consumer,
                                      size_t input) {
  const LayerPlacement& placement = plan.layers.at(static_cast<size_t>(consumer));
  const graph::LayerId producer = graph.inputs(consumer).at(input);
  return blocks(placement, output_features(graph, producer), cost::input_sliced(placement.split.kind));
}

std::vector<cost::BlockTransfer> forward_blocks(const Plan& plan, const graph::Graph& graph, graph::LayerId producer,
                                                graph::LayerId consumer, size_t input) {
  return cost::block_transfers(output_blocks(plan, graph, producer), input_blocks(plan, graph, consumer, input));
}

std::vector<cost::BlockTransfer> backward_blocks(const Plan& plan, const graph::Graph& graph,
                                                 graph::LayerId producer, graph::LayerId consumer, size_t input) {
  return cost::block_transfers(input_blocks(plan, graph, consumer, input), output_blocks(plan, graph, producer));
}

}  // namespace burst::plan
