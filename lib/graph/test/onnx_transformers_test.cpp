// ONNX import of what Hugging Face transformers' models export (GPT-2, BERT, Llama; torch's
// TorchScript exporter, eager attention): Conv1D as Reshape + Gemm + Reshape, causal masks
// computed from arange and LessOrEqual, rotary embeddings from folded cos and sin tables.
// Each built here in miniature, lowered by hand in comments; and near misses, refused.
#include <gtest/gtest.h>

#include <cmath>

#include "onnx_test_model.h"

namespace burst::graph {
namespace onnx_transformers_test {

using onnx_test::expect_refused;
using onnx_test::float_constant;
using onnx_test::ints;
using onnx_test::layer;
using onnx_test::OnnxModel;
using onnx_test::set_int;
using onnx_test::set_ints;

// Logits [last] from x [T, last]: the mean over tokens.
void mean_over_tokens(OnnxModel& m, const std::string& x) {
  auto* pooled = m.node("ReduceMean", {x}, {"output"});
  set_ints(pooled, "axes", {1});
  set_int(pooled, "keepdims", 0);
  m.output("output");
}

TEST(OnnxTransformers, Conv1DAsRowsOfAGemmIsOneLinearLayerInItsOwnLayout) {
  // x [B, 4, 3] -> Reshape [-1, 3] = [4B, 3] -> Gemm(W [3, 5], b [5]) = [4B, 5] -> Reshape to
  // Shape(x)[0:2] ++ [5] = [B, 4, 5]: a linear layer c_fc on the last dim, weight kept [3, 5]
  // (Conv1D's [in, out]), 15 + 5 parameters.
  OnnxModel m({4, 3});
  m.node("Reshape", {"input", ints(m, "rows", {-1, 3})}, {"flat"});
  m.node("Gemm", {"flat", m.weight("c_fc.weight", {3, 5}), m.weight("c_fc.bias", {5})}, {"product"});
  m.node("Shape", {"input"}, {"shape"});
  m.node("Slice", {"shape", ints(m, "zero", {0}), ints(m, "two", {2})}, {"leading"});
  set_int(m.node("Concat", {"leading", ints(m, "five", {5})}, {"restored_shape"}), "axis", 0);
  m.node("Reshape", {"product", "restored_shape"}, {"restored"});
  mean_over_tokens(m, "restored");
  const ImportedModel imported = m.import();
  const auto& attrs = std::get<LinearAttrs>(layer(imported.graph, "c_fc").attrs);
  EXPECT_TRUE(attrs.weight_in_out);
  EXPECT_TRUE(attrs.bias);
  EXPECT_EQ(imported.graph.info(*imported.graph.find("c_fc")).output_shape, (Shape{4, 5}));
  EXPECT_EQ(imported.graph.total_params(), 20);
  EXPECT_EQ(imported.weights.at("c_fc").parameters.at(0).shape, (std::vector<int64_t>{3, 5}));
  // Restored to other leading dims ([B, 2, 10] = the same elements) is no linear layer.
  OnnxModel other({4, 3});
  other.node("Reshape", {"input", ints(other, "rows", {-1, 3})}, {"flat"});
  other.node("Gemm", {"flat", other.weight("c_fc.weight", {3, 5}), other.weight("c_fc.bias", {5})}, {"product"});
  other.node("Shape", {"input"}, {"shape"});
  other.node("Slice", {"shape", ints(other, "zero", {0}), ints(other, "one", {1})}, {"batch"});
  set_int(other.node("Concat", {"batch", ints(other, "odd", {2, 10})}, {"odd_shape"}), "axis", 0);
  other.node("Reshape", {"product", "odd_shape"}, {"restored"});
  mean_over_tokens(other, "restored");
  expect_refused(other.bytes(), "puts the batch first again as [batch, 2, 10] after a computation burst does not read");
}

TEST(OnnxTransformers, ACausalMaskFromArangeAndLessOrEqualOverTheBatch) {
  // GPT-2's and Llama's mask: positions p = arange(T) (Range of Shape(x)[1]); allowed =
  // p[None, None, :] <= p[None, :, None] ([1, T, T], key <= query), expanded to [B, 1, T, T],
  // then Where(allowed, 0, float32 min): added to scores x @ x^T of one head [B, 1, T, T],
  // one causal_mask layer.
  OnnxModel m({1, 4, 4});
  m.node("Shape", {"input"}, {"shape"});
  m.node("Gather", {"shape", ints(m, "two", {2}, true)}, {"T"});
  m.node("Range", {ints(m, "start", {0}, true), "T", ints(m, "step", {1}, true)}, {"p"});
  m.node("Unsqueeze", {"p", ints(m, "keys_axes", {0, 1})}, {"keys"});
  m.node("Unsqueeze", {"p", ints(m, "queries_axes", {0, 2})}, {"queries"});
  m.node("LessOrEqual", {"keys", "queries"}, {"allowed"});
  m.node("Gather", {"shape", ints(m, "zero", {0})}, {"batch"});
  set_int(m.node("Concat", {"batch", ints(m, "rest", {1, 4, 4})}, {"expanded_shape"}), "axis", 0);
  m.node("Expand", {"allowed", "expanded_shape"}, {"allowed_b"});
  m.node("Where", {"allowed_b", float_constant(m, "open", {}, {0.0f}), float_constant(m, "closed", {}, {-3.4e38f})}, {"mask"});
  set_ints(m.node("Transpose", {"input"}, {"x_t"}), "perm", {0, 1, 3, 2});
  m.node("MatMul", {"input", "x_t"}, {"scores"});
  m.node("Add", {"scores", "mask"}, {"masked"});
  set_int(m.node("Softmax", {"masked"}, {"weights"}), "axis", -1);
  auto* pooled = m.node("ReduceMean", {"weights"}, {"output"});
  set_ints(pooled, "axes", {1, 2});
  set_int(pooled, "keepdims", 0);
  m.output("output");
  const Graph g = m.import().graph;
  int masks = 0;
  for (LayerId id = 0; id < static_cast<LayerId>(g.size()); ++id) masks += g.layer(id).op() == OpKind::CausalMask ? 1 : 0;
  EXPECT_EQ(masks, 1);
  // A mask table past 2^24 integers is refused, not built.
  OnnxModel huge({4});
  huge.node("Expand", {ints(huge, "one", {1}), ints(huge, "shape", {8192, 8192, 8192})}, {"table"});
  huge.node("Cast", {"table"}, {"output"});
  huge.output("output");
  expect_refused(huge.bytes(), "expands to a [8192, 8192, 8192] table; burst folds at most 2^24 integers");
}

// Rotary tables [1, 1, T, d] of base `theta`: angle t * theta^(-2i/d), i < d/2, repeated.
std::vector<float> rotary_table(double theta, int64_t tokens, int64_t dim, bool sine) {
  std::vector<float> table;
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t j = 0; j < dim; ++j) {
      const double angle = static_cast<double>(t) * std::pow(theta, -2.0 * static_cast<double>(j % (dim / 2)) / static_cast<double>(dim));
      table.push_back(static_cast<float>(sine ? std::sin(angle) : std::cos(angle)));
    }
  }
  return table;
}

// q [B, 2, 4, 4] (heads 2, T 4, d 4): q * cos + cat(-q[..., 2:], q[..., :2], -1) * sin.
OnnxModel rotary_model(double sine_theta, bool swap_halves = false) {
  OnnxModel m({2, 4, 4});
  const std::string cos = float_constant(m, "cos", {1, 1, 4, 4}, rotary_table(10000, 4, 4, false));
  const std::string sin = float_constant(m, "sin", {1, 1, 4, 4}, rotary_table(sine_theta, 4, 4, true));
  m.node("Mul", {"input", cos}, {"q_cos"});
  const std::vector<int64_t> second = swap_halves ? std::vector<int64_t>{0, 2} : std::vector<int64_t>{2, 4};
  const std::vector<int64_t> first = swap_halves ? std::vector<int64_t>{2, 4} : std::vector<int64_t>{0, 2};
  m.node("Slice", {"input", ints(m, "s2", {second[0]}), ints(m, "e2", {second[1]}), ints(m, "a2", {-1})}, {"x2"});
  m.node("Slice", {"input", ints(m, "s1", {first[0]}), ints(m, "e1", {first[1]}), ints(m, "a1", {-1})}, {"x1"});
  m.node("Neg", {"x2"}, {"minus_x2"});
  set_int(m.node("Concat", {"minus_x2", "x1"}, {"rotated"}), "axis", -1);
  m.node("Mul", {"rotated", sin}, {"rotated_sin"});
  m.node("Add", {"q_cos", "rotated_sin"}, {"embedded"});
  auto* pooled = m.node("ReduceMean", {"embedded"}, {"output"});
  set_ints(pooled, "axes", {1, 2});
  set_int(pooled, "keepdims", 0);
  m.output("output");
  return m;
}

TEST(OnnxTransformers, RotaryEmbeddingsAreOneLayerWithTheirBase) {
  const Graph g = rotary_model(10000).import().graph;
  int rotary = 0;
  for (LayerId id = 0; id < static_cast<LayerId>(g.size()); ++id) {
    if (const auto* attrs = std::get_if<RotaryAttrs>(&g.layer(id).attrs)) {
      ++rotary;
      EXPECT_EQ(attrs->theta, 10000);
      EXPECT_EQ(g.info(id).output_shape, (Shape{2, 4, 4}));
    }
    EXPECT_NE(g.layer(id).op(), OpKind::Slice);  // rotate_half is inside the layer
  }
  EXPECT_EQ(rotary, 1);
  // A sine of another base is not a rotary table; halves swapped are not rotate_half.
  expect_refused(rotary_model(500).bytes(), "multiplies by tables that are not rotary embeddings' cos and sin");
  expect_refused(rotary_model(10000, true).bytes(), "burst reads such tables only as rotary embeddings' cos and sin");
}

TEST(OnnxTransformers, GroupedQueryAttentionRepeatsKeysAndValues) {
  // repeat_kv: keys [B, 2, 4, 8] (2 key heads, T 4, d 8) -> Unsqueeze axis 2 -> [B, 2, 1, 4, 8]
  // -> Expand to Shape(k)[0] ++ [2, 2, 4, 8] -> Reshape [0, 4, 4, 8]: 4 heads, each key head
  // twice. A reshape, an expand and a reshape layer.
  OnnxModel m({2, 4, 8});
  m.node("Unsqueeze", {"input", ints(m, "axis", {2})}, {"k1"});
  m.node("Shape", {"input"}, {"shape"});
  m.node("Slice", {"shape", ints(m, "zero", {0}), ints(m, "one", {1})}, {"batch"});
  set_int(m.node("Concat", {"batch", ints(m, "rest", {2, 2, 4, 8})}, {"target"}), "axis", 0);
  m.node("Expand", {"k1", "target"}, {"repeated"});
  m.node("Reshape", {"repeated", ints(m, "heads", {0, 4, 4, 8})}, {"k4"});
  auto* pooled = m.node("ReduceMean", {"k4"}, {"output"});
  set_ints(pooled, "axes", {1, 2});
  set_int(pooled, "keepdims", 0);
  m.output("output");
  const Graph g = m.import().graph;
  EXPECT_EQ(g.layer(1).op(), OpKind::Reshape);
  EXPECT_EQ(g.info(1).output_shape, (Shape{2, 1, 4, 8}));
  EXPECT_EQ(std::get<ExpandAttrs>(g.layer(2).attrs).shape, (Shape{2, 2, 4, 8}));
  EXPECT_EQ(g.info(3).output_shape, (Shape{4, 4, 8}));
  // Expanding a dim that is not 1 is refused.
  OnnxModel bad({2, 4, 8});
  bad.node("Shape", {"input"}, {"shape"});
  bad.node("Slice", {"shape", ints(bad, "zero", {0}), ints(bad, "one", {1})}, {"batch"});
  set_int(bad.node("Concat", {"batch", ints(bad, "rest", {3, 4, 8})}, {"target"}), "axis", 0);
  bad.node("Expand", {"input", "target"}, {"output"});
  bad.output("output");
  expect_refused(bad.bytes(), "does not expand to [3, 4, 8]");
}

}  // namespace onnx_transformers_test
}  // namespace burst::graph
