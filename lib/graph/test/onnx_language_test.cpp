// ONNX import of a language model as users write one in a single file (onnx_language.cpp):
// token ids in, nn.Embedding tables, positions from torch.arange, attention written out with
// a scale and masked_fill of a tril buffer, the head tied to the token table. Built here in
// miniature and lowered by hand in comments; and the near misses, each refused in one line.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "onnx_test_model.h"

namespace burst::graph {
namespace onnx_language_test {

using onnx_test::expect_refused;
using onnx_test::float_constant;
using onnx_test::ints;
using onnx_test::layer;
using onnx_test::OnnxModel;
using onnx_test::set_int;
using onnx_test::set_ints;

constexpr int64_t kTokens = 4;     // T
constexpr int64_t kVocab = 7;      // rows of tok.weight
constexpr int64_t kPositions = 6;  // rows of pos.weight and of the mask buffer (block size)
constexpr int64_t kWidth = 4;      // D

// What can be broken, to check that near misses are refused.
struct Variant {
  // Entry (i, j) of the buffer [1, 1, 6, 6] the scores are masked by where it is 0: tril.
  bool (*keeps)(int64_t i, int64_t j) = [](int64_t i, int64_t j) { return j <= i; };
  float fill = -std::numeric_limits<float>::infinity();
  int64_t first_position = 0;  // torch.arange(first_position, T)
};

// A float initializer of 0/1 entries, keeps(i, j), shaped [1, 1, 6, 6].
std::string mask_buffer(OnnxModel& m, const Variant& variant) {
  const std::string name = m.weight("attn.mask", {1, 1, kPositions, kPositions}, 0);
  auto* tensor = m.proto().mutable_graph()->mutable_initializer(m.proto().graph().initializer_size() - 1);
  for (int64_t i = 0; i < kPositions; ++i) {
    for (int64_t j = 0; j < kPositions; ++j) tensor->set_float_data(static_cast<int>(i * kPositions + j), variant.keeps(i, j) ? 1 : 0);
  }
  return name;
}

// input [B, 4] ids -> Gather(tok.weight [7, 4]) [4, 4] + Gather(pos.weight [6, 4], Range(0, 4, 1))
// [4, 4] (T read off Shape(input)[1]) -> scores x @ x^T [4, 4] * 0.5 -> Where(Cast(Equal(
// mask[:, :, :4, :4], 0)), -inf, .) -> Softmax -> @ x [4, 4] -> @ tok.weight^T [4, 7].
OnnxModel tiny_gpt(const Variant& variant = {}) {
  OnnxModel m({kTokens}, 14, onnx::TensorProto::INT64);
  m.node("Gather", {m.weight("tok.weight", {kVocab, kWidth}), "input"}, {"tokens"});
  m.node("Shape", {"input"}, {"shape"});
  m.node("Gather", {"shape", ints(m, "one", {1}, true)}, {"T"});
  m.node("Range", {ints(m, "start", {variant.first_position}, true), "T", ints(m, "step", {1}, true)}, {"positions"});
  m.node("Gather", {m.weight("pos.weight", {kPositions, kWidth}), "positions"}, {"position_rows"});
  m.node("Add", {"tokens", "position_rows"}, {"x"});
  set_ints(m.node("Transpose", {"x"}, {"x_t"}), "perm", {0, 2, 1});
  m.node("MatMul", {"x", "x_t"}, {"scores"});
  // A Python number in the export is a Constant node, not an initializer (a learned scale).
  m.node("Mul", {"scores", float_constant(m, "half", {}, {0.5f})}, {"scaled"});
  m.node("Slice", {mask_buffer(m, variant), ints(m, "from", {0, 0}), ints(m, "to", {kTokens, kTokens}), ints(m, "axes", {2, 3})},
         {"mask"});
  m.node("Equal", {"mask", m.weight("zero", {}, 0)}, {"masked"});
  set_int(m.node("Cast", {"masked"}, {"masked_bool"}), "to", onnx::TensorProto::BOOL);
  m.node("Where", {"masked_bool", m.weight("fill", {}, 0), "scaled"}, {"filled"});
  m.proto().mutable_graph()->mutable_initializer(m.proto().graph().initializer_size() - 1)->set_float_data(0, variant.fill);
  set_int(m.node("Softmax", {"filled"}, {"weights"}), "axis", -1);
  m.node("MatMul", {"weights", "x"}, {"mixed"});
  set_ints(m.node("Transpose", {"tok.weight"}, {"tok_t"}), "perm", {1, 0});
  m.node("MatMul", {"mixed", "tok_t"}, {"logits"});
  m.output("logits");
  return m;
}

TEST(OnnxLanguage, TinyGptLowersToEmbeddingsCausalMaskAndTiedHead) {
  const ImportedModel imported = tiny_gpt().import();
  const Graph& g = imported.graph;
  const auto& input = std::get<InputAttrs>(layer(g, "input").attrs);
  EXPECT_EQ(input.dtype, DType::Int64);
  EXPECT_EQ(input.vocab, kVocab);  // the rows of the table that reads the ids
  EXPECT_EQ(layer(g, "tok").op(), OpKind::Embedding);
  const auto& positions = std::get<PositionEmbeddingAttrs>(layer(g, "pos.weight").attrs);
  EXPECT_EQ(positions.max_positions, kPositions);
  EXPECT_TRUE(positions.table_2d);  // nn.Embedding's [6, 4], not ViT's [1, 6, 4]
  int causal = 0, scales = 0, tied = 0;
  for (LayerId id = 0; id < static_cast<LayerId>(g.size()); ++id) {
    const LayerSpec& spec = g.layer(id);
    if (spec.op() == OpKind::CausalMask) ++causal;
    if (const auto* s = std::get_if<MulScalarAttrs>(&spec.attrs)) scales += s->factor == 0.5 ? 1 : 0;
    if (const auto* l = std::get_if<LinearAttrs>(&spec.attrs)) tied += l->tied_to == "tok" ? 1 : 0;
  }
  EXPECT_EQ(causal, 1);
  EXPECT_EQ(scales, 1);
  EXPECT_EQ(tied, 1);
  // Parameters: tok 7 x 4 + pos 6 x 4 = 52; the head's weight is tok's, the mask a buffer.
  int64_t params = 0;
  for (LayerId id = 0; id < static_cast<LayerId>(g.size()); ++id) params += g.info(id).params;
  EXPECT_EQ(params, kVocab * kWidth + kPositions * kWidth);
  EXPECT_EQ(g.info(*g.find("loss")).output_shape, Shape{});  // over logits [4, 7], per token
  EXPECT_EQ(imported.weights.at("pos.weight").parameters.at(0).shape, (std::vector<int64_t>{kPositions, kWidth}));
  EXPECT_EQ(imported.weights.count("/MatMul_2"), 0u);
}

TEST(OnnxLanguage, NearMissesAreRefused) {
  Variant not_causal;  // a bidirectional window: key i + 1 is let in
  not_causal.keeps = [](int64_t i, int64_t j) { return j <= i + 1; };
  expect_refused(tiny_gpt(not_causal).bytes(), "masks query 0 key 1 in; burst reads causal masks only");
  Variant small_fill;  // -1 does not remove a key from the softmax
  small_fill.fill = -1;
  expect_refused(tiny_gpt(small_fill).bytes(), "something other than -inf");
  Variant shifted;  // torch.arange(3, T): 1 position for 4 tokens
  shifted.first_position = 3;
  expect_refused(tiny_gpt(shifted).bytes(), "adds 1 rows of table 'pos.weight' [6, 4] to [4, 4]");
}

// Llama's pieces on x [4, 4]: RMSNorm written by hand, x * (1 / sqrt(mean(x^2) + eps)) *
// weight (Pow, ReduceMean, Add, Sqrt, Div(1, .), Mul, Mul by norm.weight [4]), then scores
// x @ x^T plus an additive mask buffer [6, 6] of 0 and `masked` above the diagonal, sliced to
// [4, 4]; Softmax; the mean over queries as logits [4].
OnnxModel rms_norm_and_additive_mask(float masked, float above_diagonal_offset = 0) {
  OnnxModel m({kTokens, kWidth});
  m.node("Pow", {"input", float_constant(m, "two", {}, {2})}, {"squared"});
  set_ints(m.node("ReduceMean", {"squared"}, {"mean_square"}), "axes", {-1});
  m.node("Add", {"mean_square", float_constant(m, "eps", {}, {1e-6f})}, {"plus_eps"});
  m.node("Sqrt", {"plus_eps"}, {"rms"});
  m.node("Div", {float_constant(m, "one", {}, {1}), "rms"}, {"inverse_rms"});
  m.node("Mul", {"input", "inverse_rms"}, {"normed"});
  m.node("Mul", {"normed", m.weight("norm.weight", {kWidth}, 1)}, {"x"});
  set_ints(m.node("Transpose", {"x"}, {"x_t"}), "perm", {0, 2, 1});
  m.node("MatMul", {"x", "x_t"}, {"scores"});
  const std::string mask = m.weight("mask", {kPositions, kPositions}, 0);
  auto* tensor = m.proto().mutable_graph()->mutable_initializer(m.proto().graph().initializer_size() - 1);
  for (int64_t i = 0; i < kPositions; ++i) {
    for (int64_t j = 0; j < kPositions; ++j) {
      if (j > i + above_diagonal_offset) tensor->set_float_data(static_cast<int>(i * kPositions + j), masked);
    }
  }
  m.node("Slice", {mask, ints(m, "from", {0, 0}), ints(m, "to", {kTokens, kTokens}), ints(m, "axes", {0, 1})}, {"mask_t"});
  m.node("Add", {"scores", "mask_t"}, {"masked_scores"});
  set_int(m.node("Softmax", {"masked_scores"}, {"weights"}), "axis", -1);
  auto* pooled = m.node("ReduceMean", {"weights"}, {"output"});  // logits [4]
  set_ints(pooled, "axes", {1});
  set_int(pooled, "keepdims", 0);
  m.output("output");
  return m;
}

TEST(OnnxLanguage, RmsNormByHandAndAnAdditiveCausalMask) {
  const Graph g = rms_norm_and_additive_mask(-std::numeric_limits<float>::infinity()).import().graph;
  std::vector<OpKind> ops;
  for (LayerId id = 1; id < static_cast<LayerId>(g.size()); ++id) ops.push_back(g.layer(id).op());
  const std::vector<OpKind> expected = {OpKind::PowScalar, OpKind::Mean,  OpKind::AddScalar, OpKind::Sqrt,
                                        OpKind::Reciprocal, OpKind::Mul,  OpKind::Scale,     OpKind::Transpose,
                                        OpKind::Matmul,     OpKind::CausalMask, OpKind::Softmax, OpKind::Mean,
                                        OpKind::SoftmaxCrossEntropy};
  EXPECT_EQ(ops, expected);
  EXPECT_EQ(std::get<PowScalarAttrs>(g.layer(1).attrs).exponent, 2);
  EXPECT_NEAR(std::get<AddScalarAttrs>(g.layer(3).attrs).value, 1e-6, 1e-12);
  EXPECT_EQ(g.total_params(), kWidth);  // norm.weight; the mask is a buffer
  // -1e9 masks as -inf does; a window that lets the next key in does not pass.
  EXPECT_NO_THROW(rms_norm_and_additive_mask(-1e9f).import());
  expect_refused(rms_norm_and_additive_mask(-1).bytes(), "additive causal masks of 0 and -inf only");
  expect_refused(rms_norm_and_additive_mask(-1e9f, 1).bytes(), "masks query 0 key 1 in");
}

TEST(OnnxLanguage, IdsWithoutAnEmbeddingAreRefused) {
  OnnxModel m({kTokens}, 14, onnx::TensorProto::INT64);
  m.node("Cast", {"input"}, {"floats"});
  m.output("floats");
  expect_refused(m.bytes(), "burst reads int64 inputs as token ids, read by an embedding");
}

}  // namespace onnx_language_test
}  // namespace burst::graph
