#include "burst/cost/tensor_split.h"

#include <variant>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::cost {

const char* split_kind_name(SplitKind kind) {
  switch (kind) {
    case SplitKind::Samples: return "samples";
    case SplitKind::Replicate: return "replicate";
    case SplitKind::Column: return "column";
    case SplitKind::Row: return "row";
    case SplitKind::Heads: return "heads";
    case SplitKind::Features: return "features";
    case SplitKind::Sequence: return "sequence";
  }
  return "?";
}

SplitKind split_kind_from_name(const std::string& name) {
  for (int i = 0; i < kSplitKindCount; ++i) {
    const auto kind = static_cast<SplitKind>(i);
    if (name == split_kind_name(kind)) return kind;
  }
  throw UserError(fmt::format(
      "unknown tensor split '{}' (known: samples, replicate, column, row, heads, features, sequence)", name));
}

bool input_sliced(SplitKind kind) { return kind == SplitKind::Row || kind == SplitKind::Features; }
bool output_sliced(SplitKind kind) { return kind == SplitKind::Column || kind == SplitKind::Features; }
bool divides_output(SplitKind kind) { return output_sliced(kind) || kind == SplitKind::Sequence; }
bool divides_input(SplitKind kind) { return input_sliced(kind) || kind == SplitKind::Sequence; }
bool sums_output(SplitKind kind) { return kind == SplitKind::Row || kind == SplitKind::Heads; }
bool sums_input_gradient(SplitKind kind) { return kind == SplitKind::Column || kind == SplitKind::Heads; }
bool divides_weights(SplitKind kind) {
  return kind == SplitKind::Column || kind == SplitKind::Row || kind == SplitKind::Heads;
}

FeatureRange feature_slice(int64_t features, int32_t part, int32_t parts) {
  BURST_ASSERT(parts >= 1 && part >= 0 && part < parts && features % parts == 0, "feature_slice out of range");
  const int64_t width = features / parts;
  return FeatureRange{part * width, (part + 1) * width};
}

bool element_wise(graph::OpKind op) {
  using graph::OpKind;
  switch (op) {
    case OpKind::Relu:
    case OpKind::Gelu:
    case OpKind::Dropout:
    case OpKind::Add:
    case OpKind::Mul:
    case OpKind::MulScalar:
    case OpKind::PowScalar:
    case OpKind::AddScalar:
    case OpKind::Sqrt:
    case OpKind::Reciprocal:
    case OpKind::Erf:
    case OpKind::Hardtanh:
    case OpKind::Sigmoid:
    case OpKind::Silu:
    case OpKind::Hardswish:
    case OpKind::Hardsigmoid:
    case OpKind::LeakyRelu:
    case OpKind::Elu:
    case OpKind::Tanh:
    case OpKind::Softplus: return true;
    default: return false;
  }
}

int64_t output_features(const graph::Graph& graph, graph::LayerId layer) {
  const graph::Shape& shape = graph.info(layer).output_shape;
  return shape.empty() ? 1 : shape.back();
}

DividedUnits divided_units(const graph::Graph& graph, graph::LayerId layer, SplitKind kind) {
  switch (kind) {
    case SplitKind::Column: return {"output features", output_features(graph, layer)};
    case SplitKind::Row: return {"input features", output_features(graph, graph.inputs(layer).at(0))};
    case SplitKind::Heads: {
      // Grouped-query attention splits whole key/value heads (and their query heads with them).
      const auto& a = std::get<graph::SelfAttentionAttrs>(graph.layer(layer).attrs);
      const graph::AttentionHeads h = graph::attention_heads(a, output_features(graph, layer));
      return h.kv_heads < h.heads ? DividedUnits{"kv heads", h.kv_heads} : DividedUnits{"heads", h.heads};
    }
    case SplitKind::Features: return {"features", output_features(graph, layer)};
    case SplitKind::Sequence: {
      const graph::Shape& shape = graph.info(layer).output_shape;
      return {"tokens", shape.size() >= 2 ? shape.front() : 0};
    }
    default: return {};
  }
}

int64_t expert_params(const graph::Graph& graph, graph::LayerId layer) {
  const auto* moe = std::get_if<graph::MoeAttrs>(&graph.layer(layer).attrs);
  return moe == nullptr ? 0 : moe->experts * 3 * output_features(graph, layer) * moe->expert_ffn;
}

int64_t part_params(const graph::Graph& graph, graph::LayerId layer, const TensorSplit& split) {
  const int64_t params = graph.info(layer).params;
  const int64_t k = split.parts;
  switch (split.kind) {
    case SplitKind::Column: return params / k;
    case SplitKind::Row: {
      if (graph.layer(layer).op() != graph::OpKind::Linear) return params;  // the loss holds none
      const int64_t out = output_features(graph, layer);
      const int64_t bias = std::get<graph::LinearAttrs>(graph.layer(layer).attrs).bias ? out : 0;
      return (params - bias) / k + bias;
    }
    case SplitKind::Heads: {
      // D: the output projection's bias, kept whole on every part.
      const bool out_bias = std::get<graph::SelfAttentionAttrs>(graph.layer(layer).attrs).out_bias;
      const int64_t width = out_bias ? output_features(graph, layer) : 0;
      return (params - width) / k + width;
    }
    case SplitKind::Samples: {
      if (split.experts <= 1) return params;
      const int64_t experts = expert_params(graph, layer);
      return params - experts + experts / split.experts;
    }
    default: return params;
  }
}

}  // namespace burst::cost
