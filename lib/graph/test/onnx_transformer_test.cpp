// ONNX import of a Vision Transformer as torch 1.13 exports it (opset 14): LayerNorm and GELU
// written as arithmetic, the class token as Expand + Concat, and nn.MultiheadAttention
// sequence-first. Built here in miniature and lowered by hand in comments; and the near
// misses, each refused in one line.
#include <gtest/gtest.h>

#include <cmath>

#include "onnx_test_model.h"

namespace burst::graph {
namespace {

using onnx_test::expect_refused;
using onnx_test::ints;
using onnx_test::layer;
using onnx_test::OnnxModel;
using onnx_test::set_int;
using onnx_test::set_ints;

constexpr int64_t kTokens = 5;  // 4 patches and the class token
constexpr int64_t kWidth = 4;   // D
constexpr int64_t kHeads = 2;   // d = D / heads = 2

// What can be broken in the attention, to check that near misses are refused.
struct AttentionVariant {
  float scale = std::sqrt(2.0f);  // queries / sqrt(d)
  bool swap_query_and_key = false;
};

// Patches: input [3, 4, 4], Conv 2x2 stride 2 to 4 channels -> [4, 2, 2]; Reshape [0, 4, -1]
// -> [4, 4]; Transpose (0, 2, 1) -> tokens [4, 4]. The class token as torch writes
// expand(token, [B, -1, -1]): Where(Equal(shape, -1), ones, shape) -> [B, 1, 1]; Expand ->
// [B, 1, 4]; Concat on axis 1 -> [5, 4]; Add pos_embedding [1, 5, 4].
std::string patches_and_class_token(OnnxModel& m) {
  auto* conv = m.node("Conv", {"input", m.weight("conv_proj.weight", {kWidth, 3, 2, 2}), m.weight("conv_proj.bias", {kWidth})}, {"c"});
  set_ints(conv, "kernel_shape", {2, 2});
  set_ints(conv, "strides", {2, 2});
  m.node("Reshape", {"c", ints(m, "flat", {0, kWidth, -1})}, {"flat_c"});
  set_ints(m.node("Transpose", {"flat_c"}, {"tokens"}), "perm", {0, 2, 1});
  m.node("Shape", {"tokens"}, {"shape"});
  m.node("Gather", {"shape", ints(m, "zero", {0}, true)}, {"b"});
  m.node("Unsqueeze", {"b", ints(m, "axes0", {0})}, {"b1"});
  set_int(m.node("Concat", {"b1", ints(m, "keep", {-1, -1})}, {"target"}), "axis", 0);
  m.node("Shape", {"target"}, {"rank"});
  auto* ones = m.node("ConstantOfShape", {"rank"}, {"ones"});
  auto* value = ones->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_int64_data(1);
  m.node("Mul", {"ones", ints(m, "minus_one", {-1}, true)}, {"minus_ones"});
  m.node("Equal", {"target", "minus_ones"}, {"keeps"});
  m.node("Where", {"keeps", "ones", "target"}, {"expand_to"});
  m.node("Expand", {m.weight("class_token", {1, 1, kWidth}), "expand_to"}, {"token"});
  set_int(m.node("Concat", {"token", "tokens"}, {"sequence"}), "axis", 1);
  m.node("Add", {"sequence", m.weight("encoder.pos_embedding", {1, kTokens, kWidth})}, {"embedded"});
  return "embedded";
}

// nn.LayerNorm as arithmetic: (x - mean) / sqrt(mean((x - mean)^2) + eps) * w + b.
std::string layer_norm(OnnxModel& m, const std::string& x, const std::string& name, float exponent = 2) {
  set_ints(m.node("ReduceMean", {x}, {name + "_mean"}), "axes", {-1});
  m.node("Sub", {x, name + "_mean"}, {name + "_centred"});
  m.node("Pow", {name + "_centred", m.weight(name + "_two", {}, exponent)}, {name + "_squared"});
  set_ints(m.node("ReduceMean", {name + "_squared"}, {name + "_var"}), "axes", {-1});
  m.node("Add", {name + "_var", m.weight(name + "_eps", {}, 1e-6f)}, {name + "_var_eps"});
  m.node("Sqrt", {name + "_var_eps"}, {name + "_std"});
  m.node("Div", {name + "_centred", name + "_std"}, {name + "_normed"});
  m.node("Mul", {name + "_normed", m.weight(name + ".weight", {kWidth}, 1)}, {name + "_scaled"});
  m.node("Add", {name + "_scaled", m.weight(name + ".bias", {kWidth}, 0)}, {name + "_out"});
  return name + "_out";
}

// nn.MultiheadAttention(4, 2) on x [B, T, 4], sequence-first (onnx_attention_pattern.cpp):
// [T, B, 4] -> projection [T, B, 12] -> thirds, each Reshape [0, -1, 2] = [T, 2B, 2] (the -1
// is 2 * batch) -> transposed -> softmax(q / sqrt 2 @ k) @ v [2B, T, 2] -> [T, 2B, 2] ->
// Reshape [-1, 4] = [T * B, 4] -> Gemm out_proj -> Reshape [T, -1, 4] = [T, B, 4] -> [B, T, 4].
std::string attention(OnnxModel& m, const std::string& x, const AttentionVariant& variant = {}) {
  set_ints(m.node("Transpose", {x}, {"seq_first"}), "perm", {1, 0, 2});
  set_ints(m.node("Transpose", {m.weight("attn.in_proj_weight", {3 * kWidth, kWidth})}, {"in_proj_t"}), "perm", {1, 0});
  m.node("MatMul", {"seq_first", "in_proj_t"}, {"projected"});
  m.node("Add", {m.weight("attn.in_proj_bias", {3 * kWidth}), "projected"}, {"packed"});
  const char* parts[3] = {"q", "k", "v"};
  if (variant.swap_query_and_key) std::swap(parts[0], parts[1]);
  for (int64_t i = 0; i < 3; ++i) {
    const std::string part = parts[i];
    m.node("Slice", {"packed", ints(m, part + "_start", {i * kWidth}), ints(m, part + "_end", {(i + 1) * kWidth}),
                     ints(m, part + "_axis", {-1})},
           {part});
    m.node("Reshape", {part, ints(m, part + "_split", {0, -1, kWidth / kHeads})}, {part + "_heads"});
    set_ints(m.node("Transpose", {part + "_heads"}, {part + "_t"}), "perm",
             part == "k" ? std::vector<int64_t>{1, 2, 0} : std::vector<int64_t>{1, 0, 2});
  }
  m.node("Div", {"q_t", m.weight("scale", {}, variant.scale)}, {"q_scaled"});
  m.node("MatMul", {"q_scaled", "k_t"}, {"scores"});
  set_int(m.node("Softmax", {"scores"}, {"weights"}), "axis", -1);
  m.node("MatMul", {"weights", "v_t"}, {"mixed"});
  set_ints(m.node("Transpose", {"mixed"}, {"mixed_t"}), "perm", {1, 0, 2});
  m.node("Reshape", {"mixed_t", ints(m, "merge", {-1, kWidth})}, {"merged"});
  auto* out = m.node("Gemm", {"merged", m.weight("attn.out_proj.weight", {kWidth, kWidth}), m.weight("attn.out_proj.bias", {kWidth})}, {"out"});
  set_int(out, "transB", 1);
  m.node("Reshape", {"out", ints(m, "unmerge", {kTokens, -1, kWidth})}, {"out_seq"});
  set_ints(m.node("Transpose", {"out_seq"}, {"attended"}), "perm", {1, 0, 2});
  return "attended";
}

// GELU as torch writes it: x * (1 + erf(x / sqrt 2)) * 0.5.
std::string gelu(OnnxModel& m, const std::string& x, float half = 0.5f) {
  m.node("Div", {x, m.weight("sqrt_two", {}, std::sqrt(2.0f))}, {"gelu_in"});
  m.node("Erf", {"gelu_in"}, {"gelu_erf"});
  m.node("Add", {"gelu_erf", m.weight("one", {}, 1)}, {"gelu_plus"});
  m.node("Mul", {x, "gelu_plus"}, {"gelu_times"});
  m.node("Mul", {"gelu_times", m.weight("half", {}, half)}, {"gelu_out"});
  return "gelu_out";
}

// The whole miniature: tokens, ln, attention, residual, MLP (MatMul with Transpose(W) as
// F.linear writes it, GELU), the class token's features (Gather 0 on axis 1), head to 3.
OnnxModel tiny_vit(const AttentionVariant& variant = {}, float ln_exponent = 2, float gelu_half = 0.5f) {
  OnnxModel m({3, 4, 4});
  const std::string x = patches_and_class_token(m);
  const std::string attended = attention(m, layer_norm(m, x, "ln", ln_exponent), variant);
  m.node("Add", {attended, x}, {"residual"});
  set_ints(m.node("Transpose", {m.weight("mlp.0.weight", {8, kWidth})}, {"w0_t"}), "perm", {1, 0});
  m.node("MatMul", {"residual", "w0_t"}, {"hidden"});
  m.node("Add", {m.weight("mlp.0.bias", {8}), "hidden"}, {"hidden_b"});
  set_ints(m.node("Transpose", {m.weight("mlp.3.weight", {kWidth, 8})}, {"w3_t"}), "perm", {1, 0});
  m.node("MatMul", {gelu(m, "hidden_b", gelu_half), "w3_t"}, {"mlp_out"});
  m.node("Add", {"mlp_out", m.weight("mlp.3.bias", {kWidth})}, {"mlp_b"});
  set_int(m.node("Gather", {"mlp_b", ints(m, "first", {0}, true)}, {"class_features"}), "axis", 1);
  set_int(m.node("Gemm", {"class_features", m.weight("head.weight", {3, kWidth}), m.weight("head.bias", {3})}, {"output"}), "transB", 1);
  m.output("output");
  return m;
}

int count(const Graph& g, OpKind op) {
  int n = 0;
  for (LayerId id = 0; id < static_cast<LayerId>(g.size()); ++id) n += g.layer(id).op() == op ? 1 : 0;
  return n;
}

TEST(OnnxTransformer, TinyVitImportsAsTheZooLayers) {
  const ImportedModel imported = tiny_vit().import();
  const Graph& g = imported.graph;
  EXPECT_EQ(layer(g, "class_token").op(), OpKind::ClassToken);
  EXPECT_EQ(std::get<PositionEmbeddingAttrs>(layer(g, "encoder.pos_embedding").attrs).max_positions, kTokens);
  EXPECT_EQ(std::get<LayerNormAttrs>(layer(g, "ln").attrs).eps, 1e-6);  // float 1e-6 as its shortest decimal
  const auto& attention = std::get<SelfAttentionAttrs>(layer(g, "attn").attrs);
  EXPECT_EQ(attention.heads, kHeads);
  EXPECT_FALSE(attention.causal);
  EXPECT_EQ(g.info(*g.find("attn")).output_shape, (Shape{kTokens, kWidth}));
  EXPECT_EQ(count(g, OpKind::Gelu), 1);
  EXPECT_EQ(count(g, OpKind::TakeToken), 1);
  EXPECT_EQ(count(g, OpKind::Linear), 3);  // mlp.0, mlp.3, head
  // input, conv, reshape, transpose, class token, positions, ln, attention, residual add,
  // mlp.0, gelu, mlp.3, take token, head, loss: every Shape/Where/Slice/Softmax/Erf node
  // folded or fused.
  EXPECT_EQ(g.size(), 15u);
  // conv 4*3*2*2 + 4 = 52; token 4; positions 5*4 = 20; ln 8; attention 12*4 + 12 + 4*4 + 4
  // = 80; mlp.0 8*4 + 8 = 40; mlp.3 4*8 + 4 = 36; head 3*4 + 3 = 15.
  EXPECT_EQ(g.total_params(), 255);
  // The weights keep torch's layout: in_proj_weight [12, 4] and mlp.0.weight [8, 4] as
  // stored (values 0, 1, 2, ...), read through their Transpose nodes.
  const auto& attn = imported.weights.at("attn").parameters;
  ASSERT_EQ(attn.size(), 4u);
  EXPECT_EQ(attn[0].shape, (std::vector<int64_t>{12, 4}));
  EXPECT_EQ(attn[0].values.at(5), 5.0f);
  EXPECT_EQ(attn[2].name, "attn.out_proj.weight");
  const auto& mlp = imported.weights.at("mlp.0").parameters;
  EXPECT_EQ(mlp[0].shape, (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(mlp[0].values.at(5), 5.0f);
  EXPECT_EQ(imported.weights.at("class_token").parameters[0].shape, (std::vector<int64_t>{1, 1, 4}));
}

TEST(OnnxTransformer, AttentionThatDiffersFromTorchsIsRefusedNamingTheStep) {
  AttentionVariant wrong_scale;
  wrong_scale.scale = 2.0f;  // 1 / d instead of 1 / sqrt(d)
  expect_refused(tiny_vit(wrong_scale).bytes(), "the queries are not scaled by 1 / sqrt(D / heads)");
  AttentionVariant swapped;
  swapped.swap_query_and_key = true;
  expect_refused(tiny_vit(swapped).bytes(), "not the thirds [0, D), [D, 2D), [2D, 3D)");
}

TEST(OnnxTransformer, ABatchMovedForAnythingButAttentionIsRefused) {
  // x [B, 3, 4] -> [3, B, 4] -> Relu: nothing burst has holds the batch off dim 0.
  OnnxModel m({3, 4});
  set_ints(m.node("Transpose", {"input"}, {"seq_first"}), "perm", {1, 0, 2});
  m.node("Relu", {"seq_first"}, {"output"});
  m.output("output");
  expect_refused(m.bytes(), "a tensor of shape [3, batch, 4] whose batch is not its first dim");
}

TEST(OnnxTransformer, BatchFirstMatMulOfTwoTensorsAndSoftmaxAreLayers) {
  // x [4, 6] per sample: scores = x @ Transpose(x, (0, 2, 1)) [4, 4]; Softmax over the last
  // axis; weights @ x [4, 6]; mean over tokens [6]; Gemm to 3 logits.
  OnnxModel m({4, 6});
  set_ints(m.node("Transpose", {"input"}, {"x_t"}), "perm", {0, 2, 1});
  m.node("MatMul", {"input", "x_t"}, {"scores"});
  set_int(m.node("Softmax", {"scores"}, {"weights"}), "axis", -1);
  m.node("MatMul", {"weights", "input"}, {"mixed"});
  auto* mean = m.node("ReduceMean", {"mixed"}, {"pooled"});
  set_ints(mean, "axes", {1});
  set_int(mean, "keepdims", 0);
  set_int(m.node("Gemm", {"pooled", m.weight("head.weight", {3, 6}), m.weight("head.bias", {3})}, {"output"}), "transB", 1);
  m.output("output");
  const Graph g = m.import().graph;
  EXPECT_EQ(count(g, OpKind::Matmul), 2);
  EXPECT_EQ(count(g, OpKind::Softmax), 1);
  EXPECT_EQ(g.info(*g.find("MatMul_1")).output_shape, (Shape{4, 4}));
  EXPECT_EQ(g.info(*g.find("MatMul_3")).output_shape, (Shape{4, 6}));
  // A softmax over the tokens (axis 1 of [B, 4, 4]) is refused.
  OnnxModel bad({4, 4});
  set_int(bad.node("Softmax", {"input"}, {"output"}), "axis", 1);
  bad.output("output");
  expect_refused(bad.bytes(), "softmax over axis 1; burst takes the last axis only");
}

TEST(OnnxTransformer, NearMissesOfLayerNormAndGeluAreNotFused) {
  // (x - mean)^3 is no LayerNorm: its Sub stays a Sub of tensors, which burst refuses.
  expect_refused(tiny_vit({}, 3.0f).bytes(), "(Sub)");
  // x * (1 + erf(x / sqrt 2)) * 0.4 is no GELU. Here sqrt 2 is an initializer, which burst
  // takes as a learned tensor: a Div by it is refused rather than frozen into a constant.
  expect_refused(tiny_vit({}, 2.0f, 0.4f).bytes(), "(Div): divides a tensor");
}

}  // namespace
}  // namespace burst::graph
