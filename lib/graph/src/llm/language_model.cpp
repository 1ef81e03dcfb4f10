#include "burst/graph/language_model.h"

namespace burst::graph {

std::optional<int64_t> sequence_length(const Graph& graph) {
  for (LayerId id = 0; id < static_cast<LayerId>(graph.size()); ++id) {
    const auto* input = std::get_if<InputAttrs>(&graph.layer(id).attrs);
    if (input != nullptr && input->dtype == DType::Int64 && input->shape.size() == 1) return input->shape[0];
  }
  return std::nullopt;
}

double model_flops_per_token(const Graph& graph) {
  const std::optional<int64_t> tokens = sequence_length(graph);
  if (!tokens) return 0;
  double embedding = 0, attention = 0;
  for (LayerId id = 0; id < static_cast<LayerId>(graph.size()); ++id) {
    const LayerSpec& layer = graph.layer(id);
    if (layer.op() == OpKind::Embedding) embedding += static_cast<double>(graph.info(id).params);
    if (const auto* a = std::get_if<SelfAttentionAttrs>(&layer.attrs)) {
      const AttentionHeads h = attention_heads(*a, graph.info(id).output_shape.at(1));
      attention += 6 * static_cast<double>(h.heads * (h.head_dim + h.v_head_dim)) * static_cast<double>(*tokens);
    }
  }
  return 6 * (static_cast<double>(graph.total_active_params()) - embedding) + attention;
}

}  // namespace burst::graph
