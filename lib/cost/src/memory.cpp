#include "burst/cost/memory.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::cost {


Optimizer parse_optimizer(const std::string& name) { return kOptimizerNames.parse(name); }

const char* optimizer_name(Optimizer optimizer) { return kOptimizerNames.name(optimizer); }

int optimizer_state_values(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::Sgd: return 0;
    case Optimizer::Momentum: return 1;
    case Optimizer::Adam: return 2;
  }
  BURST_ASSERT(false, "unknown optimizer");
}

LayerMemory& LayerMemory::operator+=(const LayerMemory& other) {
  weights += other.weights;
  gradients += other.gradients;
  optimizer_state += other.optimizer_state;
  activations += other.activations;
  buffers += other.buffers;
  return *this;
}

const char* recompute_name(Recompute recompute) { return kRecomputeNames.name(recompute); }

Recompute parse_recompute(const std::string& name) { return kRecomputeNames.parse(name); }

namespace {

// A self_attention layer's tokens and per-head sizes (op.h's defaults filled in).
struct AttentionShape {
  double tokens, heads, kv_heads, head_dim, v_head_dim;
  bool flash;
};
AttentionShape attention_shape(const graph::Graph& graph, graph::LayerId id) {
  const auto& shape = graph.info(id).output_shape;
  const auto& a = std::get<graph::SelfAttentionAttrs>(graph.layer(id).attrs);
  const graph::AttentionHeads h = graph::attention_heads(a, shape.at(1));
  return {static_cast<double>(shape.at(0)), static_cast<double>(h.heads), static_cast<double>(h.kv_heads),
          static_cast<double>(h.head_dim), static_cast<double>(h.v_head_dim), a.flash};
}

}  // namespace

double weight_gradient_share(const graph::Graph& graph, graph::LayerId id) {
  const graph::LayerInfo& info = graph.info(id);
  const double params = static_cast<double>(info.active_params > 0 ? info.active_params : info.params);
  if (!(params > 0)) return 0;
  const double flops = static_cast<double>(info.forward_flops);
  if (!(flops > 0)) return 1;
  const double tokens = info.output_shape.size() >= 2 ? static_cast<double>(info.output_shape.at(0)) : 1.0;
  return std::min(0.5, tokens * params / flops);
}

double expert_compute_share(const graph::Graph& graph, graph::LayerId id) {
  const auto* moe = std::get_if<graph::MoeAttrs>(&graph.layer(id).attrs);
  const double flops = static_cast<double>(graph.info(id).forward_flops);
  if (moe == nullptr || !(flops > 0)) return 0;
  const auto& shape = graph.info(id).output_shape;  // [T, D]
  const double experts = static_cast<double>(moe->top_k) * 2 * static_cast<double>(shape.at(0)) * 3 *
                         static_cast<double>(shape.at(1)) * static_cast<double>(moe->expert_ffn);
  return std::min(1.0, experts / flops);
}

Bytes keys_values_per_sample(const graph::Graph& graph, graph::LayerId id) {
  if (graph.layer(id).op() != graph::OpKind::SelfAttention) return Bytes(0);
  const AttentionShape a = attention_shape(graph, id);
  return Bytes(a.tokens * a.kv_heads * (a.head_dim + a.v_head_dim) * kFloatBytes);
}

Bytes attention_core_per_sample(const graph::Graph& graph, graph::LayerId id) {
  if (graph.layer(id).op() != graph::OpKind::SelfAttention) return Bytes(0);
  const AttentionShape a = attention_shape(graph, id);
  // A fused kernel keeps each row's log-sum-exp (H x T), a dense one the H x T x T weights.
  return Bytes(a.heads * a.tokens * (a.flash ? 1.0 : a.tokens) * kFloatBytes);
}

double attention_core_forward_share(const graph::Graph& graph, graph::LayerId id) {
  const double flops = static_cast<double>(graph.info(id).forward_flops);
  if (graph.layer(id).op() != graph::OpKind::SelfAttention || !(flops > 0)) return 0;
  const AttentionShape a = attention_shape(graph, id);
  const double core = 2 * a.tokens * a.tokens * a.heads * (a.head_dim + a.v_head_dim) * (a.flash ? 0.5 : 1.0);
  return std::min(1.0, core / flops);
}

Bytes saved_inside_per_sample(const graph::Graph& graph, graph::LayerId id, Recompute recompute) {
  if (graph.layer(id).op() != graph::OpKind::SelfAttention) return Bytes(0);
  // q, k and v, and the heads merged before the output projection: T x (H hd + 2 KV hd + H vd)
  // values (4 T D for multi-head attention).
  const AttentionShape a = attention_shape(graph, id);
  const Bytes projections(a.tokens * (a.heads * a.head_dim + a.kv_heads * (a.head_dim + a.v_head_dim) +
                                      a.heads * a.v_head_dim) * kFloatBytes);
  return recompute == Recompute::Selective ? projections : projections + attention_core_per_sample(graph, id);
}

LayerMemory layer_memory(const graph::Graph& graph, graph::LayerId id, int64_t batch, const MemoryOptions& options,
                         const TensorSplit& split) {
  const auto& info = graph.info(id);
  const double params = static_cast<double>(part_params(graph, id, split));
  const double parts = static_cast<double>(split.parts);
  // Context parallelism keeps 1/context of every sample's tokens on a rank.
  const double tokens = static_cast<double>(split.context);
  const double output = static_cast<double>(info.output_bytes) / (divides_output(split.kind) ? parts : 1.0) / tokens;
  // A heads split keeps its heads' share of the core; a sequence split its tokens' share.
  const bool inside_divided = split.kind == SplitKind::Heads || split.kind == SplitKind::Sequence;
  const double inside =
      saved_inside_per_sample(graph, id, options.recompute).value() / (inside_divided ? parts : 1.0) / tokens;
  // Graphs count fp32 bytes; a mixed-precision step keeps 2-byte values.
  const double moved = value_bytes(options.precision) / kFloatBytes;
  const double master = keeps_master_weights(options.precision) ? 1 : 0;
  LayerMemory memory;
  memory.weights = Bytes(params * value_bytes(options.precision));
  memory.gradients = Bytes(params * value_bytes(options.precision));
  memory.optimizer_state = Bytes(params * kFloatBytes * (optimizer_state_values(options.optimizer) + master));
  memory.activations = Bytes((output + inside) * moved * static_cast<double>(batch));
  return memory;
}

LayerMemory shard_state(LayerMemory memory, int zero_stage, int replicas) {
  BURST_ASSERT(zero_stage >= 0 && zero_stage <= 3 && replicas >= 1, "ZeRO stages are 0..3 over >= 1 replica");
  const double d = static_cast<double>(replicas);
  if (zero_stage >= 1) memory.optimizer_state = memory.optimizer_state / d;
  if (zero_stage >= 2) memory.gradients = memory.gradients / d;
  if (zero_stage >= 3) memory.weights = memory.weights / d;
  return memory;
}

Bytes machine_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return Bytes(16e9);  // unknown: the catalog's placeholder
  return Bytes(static_cast<double>(pages) * static_cast<double>(page_size));
}

}  // namespace burst::cost
