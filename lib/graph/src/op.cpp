#include "burst/graph/op.h"

#include <array>

#include "burst/util/error.h"

namespace burst::graph {
namespace {

// Indexed by OpKind; the names used in model files and tables.
constexpr std::array<const char*, kOpKindCount> kOpNames = {
    "input",       "conv2d",         "batchnorm2d",        "relu",
    "gelu",        "maxpool2d",      "avgpool2d",          "adaptive_avgpool2d",
    "linear",      "flatten",        "dropout",            "add",
    "concat",      "layernorm",      "embedding",          "position_embedding",
    "class_token", "image_to_tokens", "take_token",        "self_attention",
    "softmax_cross_entropy", "hardtanh",     "sigmoid",            "silu",
    "hardswish",   "hardsigmoid",    "mul",                "reshape",
    "transpose",   "slice",          "mean",               "stochastic_depth",
    "matmul",      "softmax",        "leaky_relu",         "elu",
    "tanh",        "softplus",       "scale",              "conv_transpose2d",
    "mul_scalar",  "causal_mask",    "conv3d",             "maxpool3d",
    "avgpool3d",   "pow_scalar",     "add_scalar",         "sqrt",
    "reciprocal",  "rotary",         "shift",              "prelu",
    "erf",         "instance_norm",  "upsample",           "pad",
    "expand",      "moe",
};

// default_attrs(kind) builds alternative number `kind` of the variant, value-initialised.
template <size_t... Index>
Attrs make_default(size_t kind, std::index_sequence<Index...>) {
  Attrs result;
  ((kind == Index ? (result.emplace<Index>(), 0) : 0), ...);
  return result;
}

}  // namespace

AttentionHeads attention_heads(const SelfAttentionAttrs& attrs, int64_t width) {
  AttentionHeads heads;
  heads.heads = attrs.heads;
  heads.kv_heads = attrs.kv_heads > 0 ? attrs.kv_heads : attrs.heads;
  heads.head_dim = attrs.head_dim > 0 ? attrs.head_dim : (attrs.heads > 0 ? width / attrs.heads : 0);
  heads.v_head_dim = attrs.v_head_dim > 0 ? attrs.v_head_dim : heads.head_dim;
  return heads;
}

const char* op_name(OpKind kind) {
  const auto index = static_cast<size_t>(kind);
  BURST_ASSERT(index < kOpNames.size(), "op kind out of range");
  return kOpNames[index];
}

std::optional<OpKind> op_from_name(const std::string& name) {
  for (size_t i = 0; i < kOpNames.size(); ++i) {
    if (name == kOpNames[i]) return static_cast<OpKind>(i);
  }
  return std::nullopt;
}

Attrs default_attrs(OpKind kind) {
  const auto index = static_cast<size_t>(kind);
  BURST_ASSERT(index < static_cast<size_t>(kOpKindCount), "op kind out of range");
  return make_default(index, std::make_index_sequence<kOpKindCount>{});
}

}  // namespace burst::graph
