#include "burst/cost/memory.h"

#include <unistd.h>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::cost {


Optimizer parse_optimizer(const std::string& name) {
  if (name == "sgd") return Optimizer::Sgd;
  if (name == "momentum") return Optimizer::Momentum;
  if (name == "adam") return Optimizer::Adam;
  throw UserError(fmt::format("unknown optimizer '{}' (known: sgd, momentum, adam)", name));
}

const char* optimizer_name(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::Sgd: return "sgd";
    case Optimizer::Momentum: return "momentum";
    case Optimizer::Adam: return "adam";
  }
  BURST_ASSERT(false, "unknown optimizer");
}

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
  return *this;
}

Bytes saved_inside_per_sample(const graph::Graph& graph, graph::LayerId id) {
  const graph::LayerSpec& layer = graph.layer(id);
  if (layer.op() != graph::OpKind::SelfAttention) return Bytes(0);
  // [T, D] in and out: q, k and v, and the heads merged before the output projection (4 x T
  // x D), and the attention probabilities (heads x T x T), all fp32.
  const auto& shape = graph.info(id).output_shape;
  const double tokens = static_cast<double>(shape.at(0)), width = static_cast<double>(shape.at(1));
  const double heads = static_cast<double>(std::get<graph::SelfAttentionAttrs>(layer.attrs).heads);
  return Bytes((4 * tokens * width + heads * tokens * tokens) * kFloatBytes);
}

LayerMemory layer_memory(const graph::Graph& graph, graph::LayerId id, int64_t batch, Optimizer optimizer,
                         const TensorSplit& split) {
  const auto& info = graph.info(id);
  const double params = static_cast<double>(part_params(graph, id, split));
  const double parts = static_cast<double>(split.parts);
  const double output = static_cast<double>(info.output_bytes) / (output_sliced(split.kind) ? parts : 1.0);
  const double inside = saved_inside_per_sample(graph, id).value() / (split.kind == SplitKind::Heads ? parts : 1.0);
  LayerMemory memory;
  memory.weights = Bytes(params * kFloatBytes);
  memory.gradients = Bytes(params * kFloatBytes);
  memory.optimizer_state = Bytes(params * kFloatBytes * optimizer_state_values(optimizer));
  memory.activations = Bytes((output + inside) * static_cast<double>(batch));
  return memory;
}

Bytes machine_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return Bytes(16e9);  // unknown: the catalog's placeholder
  return Bytes(static_cast<double>(pages) * static_cast<double>(page_size));
}

}  // namespace burst::cost
