#pragma once
// Training memory (fp32), per layer held on a device: the weights, one gradient per weight,
// the optimizer's state, and the activations kept for backward. docs/cost-model.md,
// "Memory", gives the counts and what is left out.
#include <cstdint>
#include <string>

#include "burst/cost/tensor_split.h"
#include "burst/graph/graph.h"
#include "burst/util/units.h"

namespace burst::cost {

// Bytes of one trained value (weights, gradients, state and activations are fp32).
inline constexpr double kFloatBytes = 4;

// The optimizer, for its state: SGD keeps none, SGD with momentum one buffer per weight
// (torch.optim.SGD's momentum_buffer), Adam two (exp_avg and exp_avg_sq).
enum class Optimizer { Sgd, Momentum, Adam };

// "sgd", "momentum", "adam"; anything else is a UserError listing them.
Optimizer parse_optimizer(const std::string& name);
const char* optimizer_name(Optimizer optimizer);
// fp32 values of state per weight: 0, 1 or 2.
int optimizer_state_values(Optimizer optimizer);

// Memory one device needs for a layer at a per-device batch.
struct LayerMemory {
  Bytes weights;          // trainable parameters (BatchNorm's running statistics are left out)
  Bytes gradients;        // one gradient per parameter
  Bytes optimizer_state;  // optimizer_state_values per parameter
  Bytes activations;      // kept for backward: (output + saved_inside_per_sample) bytes x batch
  Bytes total() const { return weights + gradients + optimizer_state + activations; }
  LayerMemory& operator+=(const LayerMemory& other);
};
// What a layer keeps for its backward beyond its output, per sample: self_attention keeps
// q, k, v, the merged heads and the attention probabilities (4 x T x D + heads x T x T
// fp32 values); other ops keep their inputs, which are their producers' outputs, counted
// there.
Bytes saved_inside_per_sample(const graph::Graph& graph, graph::LayerId id);

// Under a tensor split, one part's: its part_params, a sliced output's slice, and a heads
// split's share of what attention keeps inside (each part's heads).
LayerMemory layer_memory(const graph::Graph& graph, graph::LayerId id, int64_t batch,
                         Optimizer optimizer = Optimizer::Sgd, const TensorSplit& split = {});

// The memory of this machine (for the "cpu" device kind): physical pages x page size.
Bytes machine_memory();

}  // namespace burst::cost
