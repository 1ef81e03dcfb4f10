#pragma once
// Language-model figures as the field reports them (docs/llm.md, "Counting FLOPs"): a
// graph whose input is token ids [T] is a language model, and its model FLOPs per token are
// torchtitan's and Megatron's count, 6 x (active parameters - the input embedding's) for the
// matrix products of forward and backward, plus 6 x H x (head_dim + v_head_dim) x T per
// attention layer for the scores and their weighting (12 l h q t when the head sizes agree),
// counted dense as both do for causal attention. Recomputation is not counted.
#include <cstdint>
#include <optional>

#include "burst/graph/graph.h"

namespace burst::graph {

// The tokens T of a language model's token-id input; nullopt for other graphs.
std::optional<int64_t> sequence_length(const Graph& graph);

// Model FLOPs per token (above); 0 for a graph that is not a language model.
double model_flops_per_token(const Graph& graph);

}  // namespace burst::graph
