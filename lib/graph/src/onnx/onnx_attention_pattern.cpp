// The computations a sequence-first trace may be (onnx_attention.cpp): torch 1.13's and
// torch 2.x's exports of nn.MultiheadAttention(D, heads, bias=True) called as self-attention
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
// torch 2.x writes the same computation another way (match_heads_sdpa below says how). Every
// step is checked, shapes included (with d = D / heads), so a trace that computes anything
// else is refused rather than imported as attention.
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

namespace {

// What the two exports share around the heads: y = o.reshape(T, B, D).transpose(0, 1) with
// o = merged @ out_proj.weight.T + out_proj.bias, merged = heads moved back and reshaped to
// [T * B, D].
struct AttentionOutput {
  SymbolicInt tokens, width;
  const Trace* out_proj = nullptr;
  const Trace* merge = nullptr;  // the Transpose that brings the heads back
};

AttentionOutput match_output(const AttentionMatch& match, const Trace& closing) {
  using Op = Trace::Op;
  const SymbolicInt batch{1, 0};
  match.expect(closing.perm == std::vector<int64_t>{1, 0, 2}, "the last Transpose is not (1, 0, 2)");
  AttentionOutput out;
  out.tokens = closing.shape.at(1);
  out.width = closing.shape.at(2);
  const Trace& unflatten = match.step(closing, Op::Reshape, 0, "no Reshape to [T, B, D] before the last Transpose");
  match.expect_shape(unflatten, {out.tokens, batch, out.width}, "the output is not reshaped to [T, B, D]");
  out.out_proj = &match.step(unflatten, Op::Linear, 0, "no output projection before the Reshape to [T, B, D]");
  match.expect(out.out_proj->bias != nullptr && out.out_proj->weight_as_torch, "the output projection is not x @ W.T + b");
  const Trace& flatten = match.step(*out.out_proj, Op::Reshape, 0, "the output projection does not read [T * B, D]");
  match.expect_shape(flatten, {SymbolicInt{out.tokens.constant, 0}, out.width}, "the heads are not merged to [T * B, D]");
  out.merge = &match.step(flatten, Op::Transpose, 0, "the heads are not transposed back before merging");
  return out;
}

// Where the heads come from: one packed projection of the transposed input, and how many.
struct AttentionHeads {
  const Trace* projection = nullptr;
  int64_t heads = 0;
};

// torch 1.13: softmax((q / sqrt(d)) @ k) @ v on [B * heads, T, d], q, k, v the thirds of
// the projection along its last dim (the pattern at the top of this file).
AttentionHeads match_heads_1_13(const AttentionMatch& match, const AttentionOutput& out) {
  using Op = Trace::Op;
  match.expect(out.merge->perm == std::vector<int64_t>{1, 0, 2}, "the heads are not transposed back by (1, 0, 2)");
  const Trace& weighted = match.step(*out.merge, Op::MatMul, 0, "no product of the attention weights and the values");
  const Trace& weights = match.step(weighted, Op::Softmax, 0, "the attention weights are not a softmax");
  const Trace& scores = match.step(weights, Op::MatMul, 0, "the softmax does not read a product of queries and keys");
  const Trace& scaled = match.step(scores, Op::Scale, 0, "the queries are not scaled");
  const Trace& queries = match.step(scaled, Op::Transpose, 0, "the queries are not transposed to [B * heads, T, d]");
  const Trace& keys = match.step(scores, Op::Transpose, 1, "the keys are not transposed to [B * heads, d, T]");
  const Trace& values = match.step(weighted, Op::Transpose, 1, "the values are not transposed to [B * heads, T, d]");
  match.expect(queries.perm == std::vector<int64_t>{1, 0, 2} && values.perm == std::vector<int64_t>{1, 0, 2} &&
                   keys.perm == std::vector<int64_t>{1, 2, 0},
               "queries, keys and values are not permuted as (1, 0, 2), (1, 2, 0) and (1, 0, 2)");
  AttentionHeads found;
  const Trace* parts[3] = {&queries, &keys, &values};
  const int64_t width = out.width.constant;
  for (int64_t part = 0; part < 3; ++part) {
    const Trace& split = match.step(*parts[part], Op::Reshape, 0, "a head split is not a Reshape");
    found.heads = split.shape.size() == 3 ? split.shape[1].batch : 0;
    match.expect(found.heads >= 1 && width % found.heads == 0, "the heads are not merged into the batch");
    match.expect_shape(split, {out.tokens, SymbolicInt{found.heads, 0}, fixed(width / found.heads)},
                       "a head split is not [T, B * heads, D / heads]");
    const Trace& slice = match.step(split, Op::Slice, 0, "queries, keys and values are not slices of one projection");
    match.expect(slice.axis == 2 && slice.start == part * width && slice.end == (part + 1) * width,
                 "queries, keys and values are not the thirds [0, D), [D, 2D), [2D, 3D) of the projection");
    match.expect(found.projection == nullptr || found.projection == slice.inputs.at(0).get(),
                 "queries, keys and values come from different projections");
    found.projection = slice.inputs.at(0).get();
  }
  const double head_dim = static_cast<double>(width / found.heads);
  match.expect(std::abs(scaled.factor * std::sqrt(head_dim) - 1) < 1e-6, "the queries are not scaled by 1 / sqrt(D / heads)");
  return found;
}

// torch 2.x: the projection unflattened to [T, B, 3, D] and moved to [3, T, B, D]
// (unflatten, unsqueeze(0), transpose(0, -2), squeeze(-2)); q, k, v = p[0], p[1], p[2], each
// viewed as [T, B * heads, d], transposed to [B * heads, T, d] and viewed as [B, heads, T, d];
// then scaled_dot_product_attention as its ONNX export writes it, with s = sqrt(1 / sqrt(d)):
// softmax((q * s) @ (k.transpose(-2, -1) * s)) @ v, and the heads moved back by (2, 0, 1, 3).
AttentionHeads match_heads_sdpa(const AttentionMatch& match, const AttentionOutput& out) {
  using Op = Trace::Op;
  const SymbolicInt batch{1, 0};
  match.expect(out.merge->perm == std::vector<int64_t>{2, 0, 1, 3}, "the heads are not moved back by (2, 0, 1, 3)");
  const Trace& weighted = match.step(*out.merge, Op::MatMul, 0, "no product of the attention weights and the values");
  const Trace& weights = match.step(weighted, Op::Softmax, 0, "the attention weights are not a softmax");
  const Trace& scores = match.step(weights, Op::MatMul, 0, "the softmax does not read a product of queries and keys");
  const Trace& scaled_queries = match.step(scores, Op::Scale, 0, "the queries are not scaled");
  const Trace& scaled_keys = match.step(scores, Op::Scale, 1, "the keys are not scaled");
  const Trace& keys_t = match.step(scaled_keys, Op::Transpose, 0, "the keys are not transposed to [B, heads, d, T]");
  match.expect(keys_t.perm == std::vector<int64_t>{0, 1, 3, 2}, "the keys are not transposed by (0, 1, 3, 2)");
  const Trace* parts[3] = {scaled_queries.inputs.at(0).get(), keys_t.inputs.at(0).get(), weighted.inputs.at(1).get()};
  AttentionHeads found;
  const Trace* packed = nullptr;
  const int64_t width = out.width.constant;
  for (int64_t part = 0; part < 3; ++part) {
    match.expect(parts[part]->op == Op::Reshape && parts[part]->shape.size() == 4, "a head view is not [B, heads, T, d]");
    found.heads = parts[part]->shape[1].constant;
    match.expect(found.heads >= 1 && width % found.heads == 0, "the heads do not divide the width");
    const SymbolicInt head_dim = fixed(width / found.heads);
    match.expect_shape(*parts[part], {batch, fixed(found.heads), out.tokens, head_dim}, "a head view is not [B, heads, T, d]");
    const Trace& heads_first = match.step(*parts[part], Op::Transpose, 0, "the heads are not transposed first");
    match.expect(heads_first.perm == std::vector<int64_t>{1, 0, 2}, "the heads are not transposed by (1, 0, 2)");
    const Trace& split = match.step(heads_first, Op::Reshape, 0, "a head split is not a Reshape");
    match.expect_shape(split, {out.tokens, SymbolicInt{found.heads, 0}, head_dim}, "a head split is not [T, B * heads, d]");
    const Trace& pick = match.step(split, Op::Slice, 0, "queries, keys and values are not picked from one projection");
    match.expect(pick.axis == 0 && pick.start == part && pick.end == part + 1, "q, k, v are not p[0], p[1], p[2]");
    match.expect(packed == nullptr || packed == pick.inputs.at(0).get(), "queries, keys and values come from different projections");
    packed = pick.inputs.at(0).get();
  }
  const double factor = std::sqrt(1 / std::sqrt(static_cast<double>(width / found.heads)));
  match.expect(std::abs(scaled_queries.factor / factor - 1) < 1e-6 && std::abs(scaled_keys.factor / factor - 1) < 1e-6,
               "queries and keys are not each scaled by sqrt(1 / sqrt(D / heads))");
  match.expect(packed->op == Op::Reshape, "the packed projection is not reshaped to [3, T, B, D]");
  match.expect_shape(*packed, {fixed(3), out.tokens, batch, out.width}, "the packed projection is not [3, T, B, D]");
  const Trace& moved = match.step(*packed, Op::Transpose, 0, "the packed projection's thirds are not moved first");
  match.expect(moved.perm == std::vector<int64_t>{3, 1, 2, 0, 4}, "the thirds are not moved by transpose(0, -2)");
  const Trace& unflattened = match.step(moved, Op::Reshape, 0, "the projection is not unflattened to [1, T, B, 3, D]");
  match.expect_shape(unflattened, {fixed(1), out.tokens, batch, fixed(3), out.width},
                     "the projection is not unflattened to [1, T, B, 3, D]");
  found.projection = unflattened.inputs.at(0).get();
  return found;
}

}  // namespace

std::string Lowering::close_trace(const onnx::NodeProto& node, const Trace& closing) {
  const AttentionMatch match([this, &node](const std::string& reason) { fail(node, reason); });
  const AttentionOutput out = match_output(match, closing);
  const AttentionHeads found =
      out.merge->perm.size() == 4 ? match_heads_sdpa(match, out) : match_heads_1_13(match, out);
  const Trace& projection = *found.projection;
  const int64_t width = out.width.constant;
  match.expect(projection.op == Trace::Op::Linear && projection.bias != nullptr && projection.weight_as_torch,
               "the packed projection is not x @ in_proj_weight.T + in_proj_bias");
  match.expect(projection.weight->dims == std::vector<int64_t>{3 * width, width}, "the packed projection's weight is not [3D, D]");
  const Trace& start = match.step(projection, Trace::Op::Start, 0, "the projection does not read the transposed input");
  match.expect(start.perm == std::vector<int64_t>{1, 0, 2}, "the input is not transposed to [T, B, D]");

  LayerWeights parameters;  // nn.MultiheadAttention's order: in_proj_weight, in_proj_bias, out_proj
  parameters.parameters.push_back(torch_linear_weight(*projection.weight, true));
  parameters.parameters.push_back(initial(*projection.bias, {3 * width}));
  parameters.parameters.push_back(torch_linear_weight(*out.out_proj->weight, true));
  parameters.parameters.push_back(initial(*out.out_proj->bias, {width}));
  const std::string layer = add_named_layer(node, attention_name(*projection.weight, node), {start.layer},
                                            SelfAttentionAttrs{found.heads, false, 0.0});
  weights_[layer] = std::move(parameters);
  return layer;
}

}  // namespace burst::graph::onnx_import
