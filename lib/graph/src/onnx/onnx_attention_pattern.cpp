// The one computation a sequence-first trace may be (onnx_attention.cpp): torch 1.13's
// export of nn.MultiheadAttention(D, heads, bias=True) called as self-attention
// (query = key = value = x, no mask, dropout 0), in F.multi_head_attention_forward's order:
//
//   t  = x.transpose(0, 1)                                  [T, B, D]
//   p  = t @ in_proj_weight.T + in_proj_bias                [T, B, 3D]
//   q, k, v = p[..., :D], p[..., D:2D], p[..., 2D:]         [T, B, D] each
//   q = q.reshape(T, B * heads, d).transpose(0, 1)          [B * heads, T, d]
//   k = k.reshape(T, B * heads, d).permute(1, 2, 0)         [B * heads, d, T]
//   v = v.reshape(T, B * heads, d).transpose(0, 1)          [B * heads, T, d]
//   a = softmax((q / sqrt(d)) @ k, dim=-1) @ v              [B * heads, T, d]
//   o = a.transpose(0, 1).reshape(T * B, D) @ out_proj.weight.T + out_proj.bias
//   y = o.reshape(T, B, D).transpose(0, 1)                  [B, T, D]
//
// Every step is checked, shapes included (with d = D / heads), so a trace that computes
// anything else is refused rather than imported as attention.
#include <cmath>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "onnx/onnx_lowering.h"

namespace burst::graph::onnx_import {
namespace {


// Walks a trace from its end, refusing at the first step that differs from the pattern.
class AttentionMatch {
 public:
  explicit AttentionMatch(std::function<void(const std::string&)> fail) : fail_(std::move(fail)) {}

  const Trace& step(const Trace& trace, Trace::Op op, size_t input, const char* what) const {
    const Trace& next = *trace.inputs.at(input);
    expect(next.op == op, what);
    return next;
  }
  void expect(bool holds, const char* what) const {
    if (!holds) fail_(fmt::format("the sequence-first computation is not torch's multi-head self-attention: {}", what));
  }
  void expect_shape(const Trace& trace, const std::vector<SymbolicInt>& shape, const char* what) const {
    expect(trace.shape == shape, what);
  }

 private:
  std::function<void(const std::string&)> fail_;
};

// torch's parameter name for the layer: "...self_attention.in_proj_weight" -> "...self_attention".
std::string attention_name(const ConstantTensor& in_proj, const onnx::NodeProto& closing) {
  const std::string suffix = ".in_proj_weight";
  const std::string& name = in_proj.name;
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return name.substr(0, name.size() - suffix.size());
  }
  return closing.name();
}

}  // namespace

// Kept whole (about 60 lines): matches one attention pattern end to end; each step names
// what the next one reads.
std::string Lowering::close_trace(const onnx::NodeProto& node, const Trace& closing) {
  const AttentionMatch match([this, &node](const std::string& reason) { fail(node, reason); });
  using Op = Trace::Op;
  const SymbolicInt batch{1, 0};
  // The end: y = o.reshape(T, B, D).transpose(0, 1).
  match.expect(closing.perm == std::vector<int64_t>{1, 0, 2}, "the last Transpose is not (1, 0, 2)");
  const SymbolicInt tokens = closing.shape.at(1), width = closing.shape.at(2);
  const Trace& unflatten = match.step(closing, Op::Reshape, 0, "no Reshape to [T, B, D] before the last Transpose");
  match.expect_shape(unflatten, {tokens, batch, width}, "the output is not reshaped to [T, B, D]");
  const Trace& out_proj = match.step(unflatten, Op::Linear, 0, "no output projection before the Reshape to [T, B, D]");
  match.expect(out_proj.bias != nullptr && out_proj.weight_as_torch, "the output projection is not x @ W.T + b");
  const Trace& flatten = match.step(out_proj, Op::Reshape, 0, "the output projection does not read [T * B, D]");
  match.expect_shape(flatten, {SymbolicInt{tokens.constant, 0}, width}, "the heads are not merged to [T * B, D]");
  const Trace& merge = match.step(flatten, Op::Transpose, 0, "the heads are not transposed back before merging");
  match.expect(merge.perm == std::vector<int64_t>{1, 0, 2}, "the heads are not transposed back by (1, 0, 2)");
  // a = softmax((q / sqrt(d)) @ k) @ v.
  const Trace& weighted = match.step(merge, Op::MatMul, 0, "no product of the attention weights and the values");
  const Trace& weights = match.step(weighted, Op::Softmax, 0, "the attention weights are not a softmax");
  const Trace& scores = match.step(weights, Op::MatMul, 0, "the softmax does not read a product of queries and keys");
  const Trace& scaled = match.step(scores, Op::Scale, 0, "the queries are not scaled");
  const Trace& queries = match.step(scaled, Op::Transpose, 0, "the queries are not transposed to [B * heads, T, d]");
  const Trace& keys = match.step(scores, Op::Transpose, 1, "the keys are not transposed to [B * heads, d, T]");
  const Trace& values = match.step(weighted, Op::Transpose, 1, "the values are not transposed to [B * heads, T, d]");
  match.expect(queries.perm == std::vector<int64_t>{1, 0, 2} && values.perm == std::vector<int64_t>{1, 0, 2} &&
                   keys.perm == std::vector<int64_t>{1, 2, 0},
               "queries, keys and values are not permuted as (1, 0, 2), (1, 2, 0) and (1, 0, 2)");
  // q, k, v: slices of one projection, each reshaped to [T, B * heads, d].
  const Trace* projection = nullptr;
  int64_t heads = 0;
  const Trace* parts[3] = {&queries, &keys, &values};
  for (int64_t part = 0; part < 3; ++part) {
    const Trace& split = match.step(*parts[part], Op::Reshape, 0, "a head split is not a Reshape");
    heads = split.shape.size() == 3 ? split.shape[1].batch : 0;
    match.expect(heads >= 1 && width.constant % heads == 0, "the heads are not merged into the batch");
    match.expect_shape(split, {tokens, SymbolicInt{heads, 0}, fixed(width.constant / heads)},
                       "a head split is not [T, B * heads, D / heads]");
    const Trace& slice = match.step(split, Op::Slice, 0, "queries, keys and values are not slices of one projection");
    match.expect(slice.axis == 2 && slice.start == part * width.constant && slice.end == (part + 1) * width.constant,
                 "queries, keys and values are not the thirds [0, D), [D, 2D), [2D, 3D) of the projection");
    const Trace& packed = *slice.inputs.at(0);
    match.expect(projection == nullptr || projection == &packed, "queries, keys and values come from different projections");
    projection = &packed;
  }
  const double head_dim = static_cast<double>(width.constant / heads);
  match.expect(std::abs(scaled.factor * std::sqrt(head_dim) - 1) < 1e-6, "the queries are not scaled by 1 / sqrt(D / heads)");
  match.expect(projection->op == Op::Linear && projection->bias != nullptr && projection->weight_as_torch,
               "the packed projection is not x @ in_proj_weight.T + in_proj_bias");
  match.expect(projection->weight->dims == std::vector<int64_t>{3 * width.constant, width.constant},
               "the packed projection's weight is not [3D, D]");
  const Trace& start = match.step(*projection, Op::Start, 0, "the projection does not read the transposed input");
  match.expect(start.perm == std::vector<int64_t>{1, 0, 2}, "the input is not transposed to [T, B, D]");

  LayerWeights parameters;  // nn.MultiheadAttention's order: in_proj_weight, in_proj_bias, out_proj
  parameters.parameters.push_back(torch_linear_weight(*projection->weight, true));
  parameters.parameters.push_back(initial(*projection->bias, {3 * width.constant}));
  parameters.parameters.push_back(torch_linear_weight(*out_proj.weight, true));
  parameters.parameters.push_back(initial(*out_proj.bias, {width.constant}));
  const std::string layer = add_named_layer(node, attention_name(*projection->weight, node), {start.layer},
                                            SelfAttentionAttrs{heads, false, 0.0});
  weights_[layer] = std::move(parameters);
  return layer;
}

}  // namespace burst::graph::onnx_import
