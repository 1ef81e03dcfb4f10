#pragma once
// The tensor planner (docs/tensor-parallel.md): Megatron-style tensor splits, so that a
// layer can use more devices than the batch has samples.
//  - megatron_splits: which split each layer takes in a tensor group of k parts (below);
//  - candidates: every k = 2, 4, 8, ... up to max_parts and the devices of one node (a
//    tensor group stays on a node's fast links), and every count d of sample groups in 1,
//    2, 4, ... and min(N / k, B): the splits on d groups of k consecutive ranks
//    (plan::LayerPlacement), the layers left as samples on the first min(d x k, B) ranks;
//  - the amplification rule, per divided layer (column, row, heads): d x k x t_part(B / d)
//    <= A x t(B), with t the layer's forward + backward time and t_part one part's
//    (cost::CostModel::estimate_tensor), unless t(B) is under the exemption threshold. A
//    column-row pair or an attention over the limit keeps its weights whole (replicate).
//    Replicated layers (layernorm, residual adds, dropout) are the price of a tensor group
//    and are not limited;
//  - candidates over the memory capacity are dropped; the rest are estimated quickly and
//    the best few timed by the evaluator (the step program); the fastest is returned.
#include <cstdint>
#include <optional>
#include <vector>

#include "burst/cost/memory.h"
#include "burst/cost/tensor_split.h"
#include "burst/plan/plan.h"
#include "burst/plan/plan_context.h"
#include "burst/program/step_memory.h"
#include "burst/program/program_options.h"
#include "burst/planner/search_options.h"

namespace burst::planner {

// SearchOptions: the step planned for, the memory candidates must fit, the optimizer.
// AmplificationRule: as the burst search's.
struct TensorOptions : SearchOptions, AmplificationRule {
  int max_parts = 8;                              // the largest tensor group tried
  std::optional<int> parts;                       // pinned: only groups of this many parts
  bool sequence_parallel = false;                 // megatron_splits' sequence splits (Megatron's SP)
  // How many of the best-estimated candidates the evaluator times (the estimate: every
  // layer's compute one after another, its tensor all-reduces, and the weight all-reduces
  // as if none overlapped).
  int evaluated = 3;
};

struct TensorPlanResult {
  std::optional<plan::Plan> plan;  // strategy "tensor"; none when no candidate splits a layer or fits
  Seconds predicted;         // the evaluator's iteration time of `plan`
  int timed = 0;             // candidates timed by the evaluator
};

// Each layer's split in a k-part tensor group, in Megatron's pattern:
//  - self_attention, when k divides its heads: heads;
//  - a linear whose output reaches another linear through element-wise layers only, each
//    read by the next alone, when k divides the first one's output features: column, the
//    element-wise layers features, the second linear row;
//  - an untied LM head read by the loss alone, when k divides the vocabulary: column, the
//    loss row (Megatron's vocabulary-parallel head and cross-entropy);
//  - tied weights (an embedding and its LM heads), BatchNorm and any other loss: samples;
//  - every other layer: replicate (each part computes it whole on its group's samples),
//    but with `sequence_parallel` (Megatron's SP) an element-wise layer or norm on tokens
//    [T, D] whose T k divides, and whose inputs have its shape: sequence (each part its
//    slice of the tokens).
std::vector<cost::SplitKind> megatron_splits(const graph::Graph& graph, int32_t parts, bool sequence_parallel = false);

// Plans `global_batch` samples on the context's cluster (UserError for a batch < 1).
TensorPlanResult plan_tensor(const plan::PlanContext& context, int64_t global_batch, const TensorOptions& options = {});

}  // namespace burst::planner
