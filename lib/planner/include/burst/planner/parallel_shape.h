#pragma once
// 3-D parallel plans of a transformer graph, as Megatron-LM runs them (PTD-P, Narayanan et
// al., SC'21): t-way tensor parallelism (cost/tensor_split.h, megatron_splits) inside each
// of d data-parallel sample groups, p pipeline stages, micro-batches of b samples per
// sample group, under a pipeline schedule (docs/planner.md, "3-D plans").
//
// Ranks: stage s, sample group g, tensor part q is rank s·d·t + g·t + q, so a tensor group
// is t consecutive ranks (one node's fast links when t divides the devices per node) and a
// stage holds d·t consecutive ranks. Layers that take no tensor split (tied embeddings and
// their heads, the loss) split each sample group's samples over its own parts, so sample
// groups exchange no activations. Stage boundaries are chosen among the places where one
// tensor crosses (valid_stage_starts) to balance the stages' forward + backward time at b
// samples (the pipeline planner's linear partition).
#include <cstdint>
#include <string>

#include "burst/plan/plan.h"
#include "burst/plan/plan_context.h"

namespace burst::planner {

struct ParallelShape {
  int tensor = 1;           // t: parts of each tensor group
  int pipeline = 1;         // p: stages
  int data = 1;             // d: sample groups (data-parallel replicas) per stage
  int64_t micro_batch = 1;  // b: samples of one sample group in one micro-batch
  plan::Schedule schedule = plan::Schedule::OneFOneB;
  bool sequence_parallel = false;  // SP: the tensor groups' norms and element-wise layers on token slices (t > 1)
  int virtual_stages = 1;          // V: model chunks a stage's ranks hold (the interleaved schedule; 1 otherwise)
  int context = 1;                 // C: devices sharing each sample's tokens (context parallelism, ring attention)
  int experts = 1;                 // E: sample groups sharing each moe layer's experts (expert parallelism)
  int devices() const { return tensor * context * pipeline * data; }
  // Micro-batches of the step: the global batch / (d x b).
  int64_t micro_batches(int64_t global_batch) const { return global_batch / (static_cast<int64_t>(data) * micro_batch); }
};

// "TP 8 x PP 4 x DP 32, micro-batch 2, 1f1b"; "TP 8 + SP x ..." with sequence parallelism,
// "... x CP 4 x PP ..." with context parallelism, "... x DP 32 (EP 8) ..." with expert parallelism.
std::string shape_text(const ParallelShape& shape);

// UserError naming the values for a shape the model, the cluster or the batch cannot take:
// sizes below 1, t not dividing an attention layer's heads, p more than the stages the graph
// can be cut into, t x p x d not the cluster's devices, d not dividing the global batch, b
// not dividing the batch share of a sample group (global batch / d), virtual stages with a
// schedule other than interleaved (or fewer than 2 with it), p x V more than the stages the
// graph can be cut into, micro-batches not a multiple of p under interleaving, or 2 x C not
// dividing a sample's tokens; in that order.
void check_shape(const graph::Graph& graph, int devices, int64_t global_batch, const ParallelShape& shape);

// The plan of `shape` (check_shape first), strategy "3d".
plan::Plan plan_shape(const plan::PlanContext& context, int64_t global_batch, const ParallelShape& shape);

}  // namespace burst::planner
