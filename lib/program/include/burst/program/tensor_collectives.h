#pragma once
// The collectives a tensor group runs around one layer's forward and backward
// (cost/tensor_split.h for the kinds, docs/step-program.md for the ops). The program builder
// emits them from here and check_step_program checks the program against them: one rule.
//
// "The group" below: the layers placed on the same shards in the same parts as the layer
// (one segment, or segments cut apart by recomputation only): their token slices stay where
// they are between them.
//   forward, after F of
//     a row or heads split:  TP_REDUCE_SCATTER of its output over tokens when every layer
//                            reading it is a sequence split of the group, else
//                            TP_ALLREDUCE of it
//     a sequence split:      TP_ALL_GATHER of its output over tokens when some layer reads
//                            it whole (any reader but a sequence split of the group)
//   backward, before B of
//     a sequence split:      TP_REDUCE_SCATTER of its output gradient when a column or heads
//                            split of the group reads it (their input gradients are
//                            partial sums)
//     any other split layer: TP_ALL_GATHER of its output gradient when a sequence split of
//                            the group reads it (those gradients are token slices)
//   backward, after B of
//     a column or heads split: TP_ALLREDUCE of its input gradient when one flows back and
//                            its input is not a sequence split of the group (that one
//                            reduce-scatters it instead)
//     a sequence split:      TP_ALL_GATHER of its input gradient (a token slice) when that
//                            input's producer is outside the group, which receives it whole
// Every collective moves the whole tensor of the sample group at the step's precision.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "burst/cost/tensor_split.h"
#include "burst/graph/graph.h"
#include "burst/program/step_program.h"

namespace burst::program {

struct TensorCollectives {
  std::optional<OpKind> after_forward;    // of the output
  std::optional<OpKind> before_backward;  // of the output gradient
  std::optional<OpKind> after_backward;   // of the input gradient of ...
  graph::LayerId input = -1;              // ... this producer's output
};

// Whether two layers are in one group (above).
using SameTensorGroup = std::function<bool(graph::LayerId, graph::LayerId)>;

// `splits` by layer, as StepProgram holds them.
TensorCollectives tensor_collectives(const graph::Graph& graph, const std::vector<cost::TensorSplit>& splits,
                                     const SameTensorGroup& same_group, graph::LayerId id);

// The groups of a built program: segments on the same shards.
SameTensorGroup program_tensor_groups(const StepProgram& program);

}  // namespace burst::program
