#include "tensor_parts.h"

#include <torch/torch.h>

namespace burst::profiler::detail {

using cost::SplitKind;

std::vector<cost::TensorSplit> part_splits(const graph::Graph& graph, graph::LayerId id, int32_t parts) {
  const graph::LayerSpec& layer = graph.layer(id);
  std::vector<SplitKind> kinds;
  if (const auto* linear = std::get_if<graph::LinearAttrs>(&layer.attrs)) {
    if (linear->tied_to.empty()) kinds = {SplitKind::Column, SplitKind::Row};
  } else if (layer.op() == graph::OpKind::SelfAttention) {
    kinds = {SplitKind::Heads};
  }
  std::vector<cost::TensorSplit> splits;
  for (const SplitKind kind : kinds) {
    if (cost::divided_units(graph, id, kind).count % parts == 0) splits.push_back({kind, parts});
  }
  return splits;
}

Subject part_subject(const graph::Graph& graph, graph::LayerId id, const cost::TensorSplit& split,
                     layers::TensorGroupContext& group) {
  Subject subject;
  subject.build = [&graph, id, split, &group] {
    return layers::make_part_module(graph, id, layers::make_layer_module(graph, id), split, 0, &group);
  };
  subject.inputs = [&graph, id, split](int64_t batch) {
    std::vector<torch::Tensor> inputs = layers::random_inputs(graph, id, batch);
    if (cost::input_sliced(split.kind)) {  // a row part reads its slice of the input features
      const int64_t features = inputs[0].size(-1) / split.parts;
      inputs[0] = inputs[0].narrow(-1, 0, features).contiguous();
    }
    return inputs;
  };
  subject.graph_inputs = graph.inputs(id).size();
  return subject;
}

cost::ProfileEntry part_entry(cost::ProfileEntry whole, const graph::Graph& graph, graph::LayerId id,
                              const cost::TensorSplit& split) {
  whole.split = split;
  whole.forward_flops_per_sample /= split.parts;
  if (cost::input_sliced(split.kind)) whole.input_bytes_per_sample /= split.parts;
  if (cost::output_sliced(split.kind)) whole.output_bytes_per_sample /= split.parts;
  whole.params = cost::part_params(graph, id, split);
  return whole;
}

}  // namespace burst::profiler::detail
