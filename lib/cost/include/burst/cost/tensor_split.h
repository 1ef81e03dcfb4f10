#pragma once
// Tensor splits: how the ranks of one sample group share a layer beyond its samples
// (docs/tensor-parallel.md). A layer placed with `parts` = k runs on d sample groups of k
// ranks each; every rank of a group holds the group's samples, and part p (its position in
// the group) holds the p-th of k equal slices of what the split divides:
//
//   kind       ops              weights of part p         input      output
//   samples    any              all (k = 1)               whole      whole
//   replicate  any but BN       all, a copy               whole      whole (a copy)
//   column     linear           output features slice p   whole      features slice p
//   row        linear,          input features slice p    slice p    whole, summed over parts
//              cross-entropy    (the loss: none; its logits' vocabulary slice p, as
//                               Megatron's vocabulary-parallel loss)
//   heads      self_attention   heads slice p             whole      whole, summed over parts
//   features   element-wise     none                      slice p    features slice p
//   sequence   element-wise,    all, a copy               tokens     tokens slice p
//              layernorm                                  slice p
//
// "Features" are the last axis of an activation ([T, D]: D). "Summed over parts": the
// layer's forward ends with an all-reduce over its group (Megatron's "reduce from region");
// a column or heads split's input gradient is a partial sum too, and its backward ends with
// the all-reduce of it ("copy to region"). A column split followed by a row split of the
// same group, with element-wise layers between them kept as features splits, exchanges
// nothing: that pairing is derived, not declared (plan::activation_transfers finds the
// pieces local).
//
// Sequence splits are Megatron's sequence parallelism (Korthikanti et al. 2022): the layers
// between a tensor group's row/heads and column/heads splits (norms, residual adds, dropout)
// each run on slice p of every sample's tokens, the first axis of [T, D]. A row or heads
// output read only by sequence splits is reduce-scattered over tokens instead of
// all-reduced; a sequence split's output is all-gathered where a layer reads it whole; the
// backward mirrors both (docs/step-program.md). Pieces between segments never carry a
// token slice: a sequence split's output leaves its segment gathered.
//
// Context parallelism (`context` = c > 1) splits every sample's tokens over c ranks for
// every layer of a plan, beside any of the kinds above: each rank computes its 1/c of the
// tokens (a self_attention layer its 1/c of the causal score blocks, balanced as ring
// attention with two chunks a rank), so its compute, its activations and its messages are
// 1/c of the layer's at the same samples (docs/step-program.md, "Context parallelism").
//
// Expert parallelism (`experts` = e > 1, moe layers only) spreads a moe layer's experts over
// e sample groups: each rank holds E / e of them (and the router and shared experts whole),
// and computes on average what it would hold them all (its tokens' top-k copies, dispatched
// to the experts' ranks and combined back by all-to-alls; docs/step-program.md, "Expert
// parallelism"). part_params counts its E / e experts.
// No libtorch.
#include <cstdint>
#include <string>

#include "burst/graph/graph.h"

namespace burst::cost {

enum class SplitKind : uint8_t { Samples, Replicate, Column, Row, Heads, Features, Sequence };
inline constexpr int kSplitKindCount = 7;
const char* split_kind_name(SplitKind kind);  // "samples", "replicate", "column", ...
// UserError naming the known kinds for any other name.
SplitKind split_kind_from_name(const std::string& name);

struct TensorSplit {
  SplitKind kind = SplitKind::Samples;
  int32_t parts = 1;    // ranks per sample group; 1 for samples
  int32_t context = 1;  // ranks sharing each sample's tokens (context parallelism); 1 without
  int32_t experts = 1;  // moe layers: sample groups sharing its experts (expert parallelism); 1 without

  bool splits() const { return parts > 1; }
  // What a rank computes of the layer at the same samples: 1 / (parts dividing it x context).
  bool divides_tokens() const { return context > 1; }
  bool operator==(const TensorSplit& other) const {
    return kind == other.kind && parts == other.parts && context == other.context && experts == other.experts;
  }
  bool operator!=(const TensorSplit& other) const { return !(*this == other); }
};

// Whether part p's input is features slice p (row, features), rather than whole.
bool input_sliced(SplitKind kind);
// Whether part p's output is features slice p (column, features), rather than whole.
bool output_sliced(SplitKind kind);
// Whether part p holds 1/parts of its output (column, features, sequence) or of its input
// (row, features, sequence): what its compute and its saved activations scale with.
bool divides_output(SplitKind kind);
bool divides_input(SplitKind kind);
// Whether the forward ends with an all-reduce of the output over the group (row, heads).
bool sums_output(SplitKind kind);
// Whether the backward ends with an all-reduce of the input gradient (column, heads).
bool sums_input_gradient(SplitKind kind);
// Whether the parts hold different weights (column, row, heads): their gradients are
// all-reduced over the sample groups only, among the ranks of the same part.
bool divides_weights(SplitKind kind);

// Features [begin, end) of slice `part` of `parts` of `features` (parts divides features).
struct FeatureRange {
  int64_t begin = 0;
  int64_t end = 0;

  int64_t size() const { return end - begin; }
  bool operator==(const FeatureRange& other) const { return begin == other.begin && end == other.end; }
  bool operator!=(const FeatureRange& other) const { return !(*this == other); }
};
FeatureRange feature_slice(int64_t features, int32_t part, int32_t parts);

// Whether `op` works element by element on inputs of its output's shape (relu, gelu,
// dropout, add, mul, ...): the ops a features split may keep sliced.
bool element_wise(graph::OpKind op);

// The features of `layer`'s output: its last axis (1 for a scalar per sample).
int64_t output_features(const graph::Graph& graph, graph::LayerId layer);

// What a split of `kind` divides in `layer` and how many there are of it: a column split
// the output features, a row split the input features, a heads split the heads (of a
// self_attention layer), a features split the last axis, a sequence split the tokens (the
// first axis of a per-sample shape of two axes or more); {"", 0} for the kinds that divide
// nothing. A split into k parts needs k to divide the count.
struct DividedUnits {
  const char* what = "";
  int64_t count = 0;
};
DividedUnits divided_units(const graph::Graph& graph, graph::LayerId layer, SplitKind kind);
// Parameters one part of `layer` holds under `split`: a column split divides weight and
// bias, a row split the weight (each part keeps the bias), a heads split the Q/K/V
// projection and the output projection's weight (each keeps its bias); all otherwise.
int64_t part_params(const graph::Graph& graph, graph::LayerId layer, const TensorSplit& split);
// A moe layer's experts' parameters, all of them (SwiGLU: 3 x D x expert_ffn each); 0 for
// other layers. Expert parallelism divides these among its sample groups.
int64_t expert_params(const graph::Graph& graph, graph::LayerId layer);

}  // namespace burst::cost
