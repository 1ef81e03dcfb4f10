#pragma once
// Training memory, per layer held on a device: the weights, one gradient per weight, the
// optimizer's state (with the fp32 master weights of mixed precision), and the activations
// kept for backward; and how ZeRO's stages shard the first three. docs/cost-model.md,
// "Memory", gives the counts and what is left out.
#include <cstdint>
#include <string>

#include "burst/cost/precision.h"
#include "burst/cost/tensor_split.h"
#include "burst/graph/graph.h"
#include "burst/util/units.h"

namespace burst::cost {

// Bytes of one fp32 value (graphs count their tensors' bytes in fp32; optimizer state and
// master weights are fp32 at every precision).
inline constexpr double kFloatBytes = 4;

// Activation recomputation (docs/cost-model.md, "Recomputation"): none; selective, as
// Megatron-LM, recomputes each attention core (its heads x T x T probabilities are not
// kept); full recomputes each recompute unit's forward before its backward, keeping only
// the unit's inputs.
enum class Recompute : uint8_t { None, Selective, Full };
inline constexpr EnumNames<Recompute, 3> kRecomputeNames{
    "recompute", {{{Recompute::None, "none"}, {Recompute::Selective, "selective"}, {Recompute::Full, "full"}}}};
const char* recompute_name(Recompute recompute);  // "none", "selective", "full"
// UserError naming the known ones for any other word.
Recompute parse_recompute(const std::string& name);

// The optimizer, for its state: SGD keeps none, SGD with momentum one buffer per weight
// (torch.optim.SGD's momentum_buffer), Adam two (exp_avg and exp_avg_sq).
enum class Optimizer { Sgd, Momentum, Adam };
inline constexpr EnumNames<Optimizer, 3> kOptimizerNames{
    "optimizer", {{{Optimizer::Sgd, "sgd"}, {Optimizer::Momentum, "momentum"}, {Optimizer::Adam, "adam"}}}};

// "sgd", "momentum", "adam"; anything else is a UserError listing them.
Optimizer parse_optimizer(const std::string& name);
const char* optimizer_name(Optimizer optimizer);
// fp32 values of state per weight: 0, 1 or 2.
int optimizer_state_values(Optimizer optimizer);

// What the memory of a layer depends on besides its shapes.
struct MemoryOptions {
  Optimizer optimizer = Optimizer::Sgd;
  Precision precision = Precision::Fp32;
  Recompute recompute = Recompute::None;  // selective: attention keeps no probabilities
};

// Memory one device needs for a layer at a per-device batch.
struct LayerMemory {
  Bytes weights;          // trainable parameters, value_bytes each (BatchNorm's running statistics are left out)
  Bytes gradients;        // one gradient per parameter, value_bytes each
  // fp32: optimizer_state_values per parameter; mixed precision also the fp32 master weight
  // (the ZeRO paper's K: 12 bytes a parameter for Adam).
  Bytes optimizer_state;
  Bytes activations;      // kept for backward: (output + saved_inside_per_sample) bytes x batch
  // Communication buffers while a layer runs (step_memory.h): ZeRO 3's gathered weights, ring
  // attention's key and value blocks.
  Bytes buffers;
  Bytes total() const { return weights + gradients + optimizer_state + activations + buffers; }
  LayerMemory& operator+=(const LayerMemory& other);
};
// What a layer keeps for its backward beyond its output, per sample, in fp32 bytes:
// self_attention keeps q, k, v, the merged heads and the attention probabilities (4 x T x
// D + heads x T x T values; without the probabilities under selective recomputation);
// other ops keep their inputs, which are their producers' outputs, counted there.
Bytes saved_inside_per_sample(const graph::Graph& graph, graph::LayerId id, Recompute recompute = Recompute::None);
// The attention probabilities of a self_attention layer per sample (heads x T x T fp32
// values; 0 for other ops): what selective recomputation recomputes and does not keep.
Bytes attention_core_per_sample(const graph::Graph& graph, graph::LayerId id);

// The share of a self_attention layer's forward that selective recomputation runs again:
// its core's FLOPs (QK^T and the probabilities times V, 2 x 2 x T x T x D a sample) over the
// layer's; 0 for other ops. The projections are not recomputed.
double attention_core_forward_share(const graph::Graph& graph, graph::LayerId id);
// The share of a layer's backward that computes its weight gradients (ZB-H1's W pass): a
// weight's gradient costs what its product did in the forward, 2 x tokens x (active)
// parameters FLOPs of a backward of 2 x the forward's, so tokens x parameters / forward
// FLOPs, at most 1/2 (a linear: 1/2; attention: 1/2 of the projections' share); 1 for a
// layer with weights and no FLOPs (an embedding's backward is its weights' scatter-add), 0
// without weights.
double weight_gradient_share(const graph::Graph& graph, graph::LayerId id);
// The share of a moe layer's forward FLOPs its experts compute (top_k x 2 x tokens x each
// expert's 3 D F_e weights, over the layer's); 0 for other layers.
double expert_compute_share(const graph::Graph& graph, graph::LayerId id);
// A self_attention layer's keys and values per sample, fp32 bytes: T x KV x (hd + vd) values
// (0 for other layers). Ring attention passes a rank's share of them around its context group.
Bytes keys_values_per_sample(const graph::Graph& graph, graph::LayerId id);

// Under a tensor split, one part's: its part_params, a sliced output's slice, and a heads
// split's share of what attention keeps inside (each part's heads). Activations in the
// precision's value_bytes.
LayerMemory layer_memory(const graph::Graph& graph, graph::LayerId id, int64_t batch, const MemoryOptions& options = {},
                         const TensorSplit& split = {});

// ZeRO (Rajbhandari et al., SC'20) over `replicas` data-parallel copies of a layer: stage 1
// divides the optimizer state (and master weights) by the replicas, 2 the gradients too, 3
// the weights too; 0 changes nothing. Activations are untouched.
LayerMemory shard_state(LayerMemory memory, int zero_stage, int replicas);

// The memory of this machine (for the "cpu" device kind): physical pages x page size.
Bytes machine_memory();

}  // namespace burst::cost
