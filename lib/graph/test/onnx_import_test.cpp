// ONNX import: models built here with ONNX's protobuf types, lowered by hand in comments;
// and malformed files, each refused with one line (never a crash).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <stdexcept>
#include <tuple>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "burst/graph/model_json.h"
#include "burst/graph/onnx_import.h"
#include "burst/util/error.h"
#include "onnx_test_model.h"

namespace burst::graph {
namespace {

using onnx_test::expect_refused;
using onnx_test::ints;
using onnx_test::layer;
using onnx_test::OnnxModel;
using onnx_test::refusal;
using onnx_test::set_int;
using onnx_test::set_ints;

// What resnet's stem and head export to, in miniature: input [3, 8, 8]; Conv 4 filters 3x3,
// pad 1 -> [4, 8, 8]; BatchNormalization in training mode (3 outputs); Relu; MaxPool 2x2
// stride 2 -> [4, 4, 4]; GlobalAveragePool -> [4, 1, 1]; Flatten -> [4]; Gemm transB=1 with
// a [5, 4] weight -> [5]; and burst's loss on the logits.
OnnxModel tiny_resnet() {
  OnnxModel m({3, 8, 8});
  auto* conv = m.node("Conv", {"input", m.weight("conv1.weight", {4, 3, 3, 3}), m.weight("conv1.bias", {4})}, {"c"});
  set_ints(conv, "kernel_shape", {3, 3});
  set_ints(conv, "pads", {1, 1, 1, 1});
  auto* bn = m.node("BatchNormalization",
                    {"c", m.weight("bn1.weight", {4}, 1), m.weight("bn1.bias", {4}, 0),
                     m.weight("bn1.running_mean", {4}, 0), m.weight("bn1.running_var", {4}, 1)},
                    {"b", "mean_out", "var_out"});
  set_int(bn, "training_mode", 1);
  m.node("Relu", {"b"}, {"r"});
  auto* pool = m.node("MaxPool", {"r"}, {"p"});
  set_ints(pool, "kernel_shape", {2, 2});
  set_ints(pool, "strides", {2, 2});
  m.node("GlobalAveragePool", {"p"}, {"g"});
  m.node("Flatten", {"g"}, {"f"});
  auto* gemm = m.node("Gemm", {"f", m.weight("fc.weight", {5, 4}), m.weight("fc.bias", {5})}, {"output"});
  set_int(gemm, "transB", 1);
  m.output("output");
  return m;
}

TEST(OnnxImport, ResnetStemAndHead) {
  const ImportedModel imported = tiny_resnet().import();
  const Graph& g = imported.graph;
  EXPECT_EQ(g.name(), "test");
  // input, conv, bn, relu, pool, gap, flatten, fc, loss.
  ASSERT_EQ(g.size(), 9u);
  const auto& conv = std::get<Conv2dAttrs>(layer(g, "conv1").attrs);
  EXPECT_EQ(conv.out_channels, 4);
  EXPECT_EQ(conv.padding, (Pair{1, 1}));
  EXPECT_TRUE(conv.bias);
  const auto& bn = std::get<BatchNorm2dAttrs>(layer(g, "bn1").attrs);
  EXPECT_DOUBLE_EQ(bn.momentum, 0.1);  // ONNX default 0.9 = torch's 0.1
  const auto& pool = std::get<MaxPool2dAttrs>(layer(g, "MaxPool_3").attrs);
  EXPECT_EQ(pool.stride, (Pair{2, 2}));
  EXPECT_EQ(g.info(*g.find("fc")).output_shape, (Shape{5}));
  EXPECT_EQ(layer(g, "loss").op(), OpKind::SoftmaxCrossEntropy);
  // Parameters: conv 4*3*9 + 4 = 112; bn 2*4 = 8; fc 5*4 + 5 = 25; total 145.
  EXPECT_EQ(g.total_params(), 145);
  // Weights keep their state_dict names and PyTorch's shapes, BatchNorm's statistics as buffers.
  const LayerWeights& bn_weights = imported.weights.at("bn1");
  ASSERT_EQ(bn_weights.parameters.size(), 2u);
  ASSERT_EQ(bn_weights.buffers.size(), 2u);
  EXPECT_EQ(bn_weights.buffers[1].name, "bn1.running_var");
  const LayerWeights& fc = imported.weights.at("fc");
  EXPECT_EQ(fc.parameters[0].shape, (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(fc.parameters[0].values[6], 6.0f);  // row 1, column 2 of 0, 1, 2, ...
}

TEST(OnnxImport, GemmWithoutTransposeAndMatMulPlusBiasBecomeLinearInTorchLayout) {
  // Gemm transB=0 and MatMul both hold the weight as [in, out] = [4, 3], values 0..11, so
  // W[i][o] = 3i + o. torch.nn.Linear's weight is [out, in]: element (o, i) = 3i + o, and
  // (1, 2) is 7. The Add of a [3] bias after the MatMul joins the linear layer.
  for (const std::string op : {"Gemm", "MatMul"}) {
    OnnxModel m({4});
    m.node(op, {"input", m.weight("fc.weight", {4, 3})}, {"h"});
    if (op == "MatMul") {
      m.node("Add", {"h", m.weight("fc.bias", {3})}, {"output"});
    } else {
      m.node("Identity", {"h"}, {"output"});
    }
    m.output("output");
    const ImportedModel imported = m.import();
    const auto& linear = std::get<LinearAttrs>(layer(imported.graph, "fc").attrs);
    EXPECT_EQ(linear.out_features, 3) << op;
    EXPECT_EQ(linear.bias, op == "MatMul") << op;
    const InitialTensor& weight = imported.weights.at("fc").parameters.at(0);
    EXPECT_EQ(weight.shape, (std::vector<int64_t>{3, 4})) << op;
    EXPECT_EQ(weight.values[1 * 4 + 2], 7.0f) << op;
    EXPECT_EQ(imported.graph.total_params(), op == "MatMul" ? 15 : 12) << op;
  }
}

TEST(OnnxImport, SqueezeExcitationClipAndHardActivations) {
  // mobilenet's pieces: Clip(0, 6) -> hardtanh; HardSigmoid(1/6, 0.5) and HardSwish;
  // squeeze-excitation as GlobalAveragePool -> Sigmoid -> Mul with the features.
  OnnxModel m({2, 4, 4});
  auto* zero = m.proto().mutable_graph()->add_initializer();
  zero->set_name("zero");
  zero->set_data_type(onnx::TensorProto::FLOAT);
  zero->add_float_data(0);
  m.weight("six", {}, 6);
  m.node("Clip", {"input", "zero", "six"}, {"clipped"});
  m.node("HardSwish", {"clipped"}, {"swished"});
  m.node("GlobalAveragePool", {"swished"}, {"squeezed"});
  auto* hs = m.node("HardSigmoid", {"squeezed"}, {"gate"});
  auto* alpha = hs->add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_f(1.0f / 6);
  m.node("Mul", {"swished", "gate"}, {"scaled"});
  m.node("GlobalAveragePool", {"scaled"}, {"pooled"});
  m.node("Flatten", {"pooled"}, {"output"});
  m.output("output");
  const Graph g = m.import().graph;
  const auto& clip = std::get<HardtanhAttrs>(layer(g, "Clip_0").attrs);
  EXPECT_EQ(clip.min_val, 0);
  EXPECT_EQ(clip.max_val, 6);
  EXPECT_EQ(layer(g, "HardSwish_1").op(), OpKind::Hardswish);
  EXPECT_EQ(layer(g, "HardSigmoid_3").op(), OpKind::Hardsigmoid);
  EXPECT_EQ(g.info(*g.find("Mul_4")).output_shape, (Shape{2, 4, 4}));
}

TEST(OnnxImport, ConvTransposeAsUNetUpSamplesAndATrainableScale) {
  // ConvTranspose(kernel 2, stride 2) of [2, 4, 4] with weight [in 2, out 3, 2, 2] and a bias:
  // [3, 8, 8], 2 x 3 x 4 + 3 parameters; then a Mul by an initializer [1, 3, 1, 1] (a
  // learned per-channel scale): a scale layer named after it, its shape [3, 1, 1].
  OnnxModel m({2, 4, 4});
  auto* up = m.node("ConvTranspose", {"input", m.weight("up.weight", {2, 3, 2, 2}), m.weight("up.bias", {3})}, {"up"});
  set_ints(up, "kernel_shape", {2, 2});
  set_ints(up, "strides", {2, 2});
  m.node("Mul", {"up", m.weight("gamma", {1, 3, 1, 1})}, {"scaled"});
  m.node("GlobalAveragePool", {"scaled"}, {"pooled"});
  m.node("Flatten", {"pooled"}, {"output"});
  m.output("output");
  const Graph g = m.import().graph;
  const auto& attrs = std::get<ConvTranspose2dAttrs>(layer(g, "up").attrs);
  EXPECT_EQ(attrs.out_channels, 3);
  EXPECT_EQ(g.info(*g.find("up")).output_shape, (Shape{3, 8, 8}));
  EXPECT_EQ(g.info(*g.find("up")).params, 27);
  EXPECT_EQ(std::get<ScaleAttrs>(layer(g, "gamma").attrs).shape, (Shape{3, 1, 1}));
  EXPECT_EQ(g.total_params(), 30);
}

TEST(OnnxImport, VolumesAsConv3dBatchNorm3dAndPools) {
  // A volume [1, 4, 4, 4]: Conv (5-D weight [2, 1, 3, 3, 3], pads 1 on every side) ->
  // [2, 4, 4, 4], 54 + 2 parameters; BatchNormalization over its 2 channels; MaxPool 2 ->
  // [2, 2, 2, 2]; AveragePool kernel [1, 2, 2] -> [2, 2, 1, 1]; GlobalAveragePool ->
  // [2, 1, 1, 1] (a mean over depth, height and width).
  OnnxModel m({1, 4, 4, 4});
  auto* conv = m.node("Conv", {"input", m.weight("conv.weight", {2, 1, 3, 3, 3}), m.weight("conv.bias", {2})}, {"c"});
  set_ints(conv, "kernel_shape", {3, 3, 3});
  set_ints(conv, "pads", {1, 1, 1, 1, 1, 1});
  m.node("BatchNormalization", {"c", m.weight("bn.weight", {2}, 1), m.weight("bn.bias", {2}, 0),
                                m.weight("bn.running_mean", {2}, 0), m.weight("bn.running_var", {2}, 1)},
         {"n"});
  set_ints(m.node("MaxPool", {"n"}, {"p"}), "kernel_shape", {2, 2, 2});
  set_ints(m.node("AveragePool", {"p"}, {"a"}), "kernel_shape", {1, 2, 2});
  m.node("GlobalAveragePool", {"a"}, {"g"});
  m.node("Flatten", {"g"}, {"output"});
  m.output("output");
  const Graph g = m.import().graph;
  EXPECT_EQ(std::get<Conv3dAttrs>(layer(g, "conv").attrs).padding, (Shape{1, 1, 1}));
  EXPECT_EQ(g.info(*g.find("conv")).output_shape, (Shape{2, 4, 4, 4}));
  EXPECT_EQ(layer(g, "bn").op(), OpKind::BatchNorm2d);
  EXPECT_EQ(g.total_params(), 54 + 2 + 4);
  int pools = 0;
  for (LayerId id = 0; id < static_cast<LayerId>(g.size()); ++id) {
    const OpKind op = g.layer(id).op();
    pools += op == OpKind::MaxPool3d || op == OpKind::AvgPool3d ? 1 : 0;
    if (op == OpKind::Mean) {
      EXPECT_EQ(g.info(id).output_shape, (Shape{2, 1, 1, 1}));
    }
  }
  EXPECT_EQ(pools, 2);
  // Pads that differ at the two ends of a dim are refused.
  OnnxModel uneven({1, 4, 4, 4});
  auto* bad = uneven.node("Conv", {"input", uneven.weight("conv.weight", {2, 1, 3, 3, 3})}, {"output"});
  set_ints(bad, "pads", {1, 1, 1, 0, 1, 1});
  uneven.output("output");
  expect_refused(uneven.bytes(), "are not the same at both ends");
}

TEST(OnnxImport, GroupNormPReluReflectionPadAndUpsamplingAsTorchWritesThem) {
  // x [4, 4, 4]. nn.GroupNorm(2, 4): Reshape [0, 2, -1] -> InstanceNormalization with constant
  // ones and zeros -> Reshape to Shape(x) -> Mul(gn.weight [4] unsqueezed to [4, 1, 1]) ->
  // Add(gn.bias likewise): reshape, instance_norm, reshape, scale and shift layers, the
  // parameters kept [4]. nn.PReLU(4) likewise. F.pad(reflect, 1) of H and W -> [4, 6, 6];
  // nn.Upsample(2) -> [4, 12, 12]; then pooled to logits [4]. 12 parameters.
  OnnxModel m({4, 4, 4});
  const auto constant = [&m](const std::string& name, const std::vector<float>& values) {
    return onnx_test::float_constant(m, name, {static_cast<int64_t>(values.size())}, values);
  };
  m.node("Reshape", {"input", ints(m, "groups", {0, 2, -1})}, {"grouped"});
  m.node("InstanceNormalization", {"grouped", constant("ones", {1, 1}), constant("zeros", {0, 0})}, {"normed"});
  m.node("Shape", {"input"}, {"shape"});
  m.node("Reshape", {"normed", "shape"}, {"ungrouped"});
  m.node("Unsqueeze", {m.weight("gn.weight", {4}, 1), ints(m, "axes", {1, 2})}, {"gamma"});
  m.node("Mul", {"ungrouped", "gamma"}, {"scaled"});
  m.node("Unsqueeze", {m.weight("gn.bias", {4}, 0), "axes"}, {"beta"});
  m.node("Add", {"scaled", "beta"}, {"shifted"});
  m.node("Unsqueeze", {m.weight("act.weight", {4}, 0.25f), "axes"}, {"slope"});
  m.node("PRelu", {"shifted", "slope"}, {"activated"});
  auto* pad = m.node("Pad", {"activated", ints(m, "pads", {0, 0, 1, 1, 0, 0, 1, 1})}, {"padded"});
  auto* mode = pad->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("reflect");
  auto* resize = m.node("Resize", {"padded", "", constant("scales", {1, 1, 2, 2})}, {"up"});
  for (const auto& [name, value] : {std::pair<const char*, const char*>{"mode", "nearest"},
                                    {"coordinate_transformation_mode", "asymmetric"}, {"nearest_mode", "floor"}}) {
    auto* attribute = resize->add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::STRING);
    attribute->set_s(value);
  }
  m.node("GlobalAveragePool", {"up"}, {"pooled"});
  m.node("Flatten", {"pooled"}, {"output"});
  m.output("output");
  const ImportedModel imported = m.import();
  const Graph& g = imported.graph;
  std::vector<OpKind> ops;
  for (LayerId id = 1; id < static_cast<LayerId>(g.size()); ++id) ops.push_back(g.layer(id).op());
  const std::vector<OpKind> expected = {OpKind::Reshape, OpKind::InstanceNorm, OpKind::Reshape, OpKind::Scale,
                                        OpKind::Shift,   OpKind::PRelu,        OpKind::Pad,     OpKind::Upsample,
                                        OpKind::AdaptiveAvgPool2d, OpKind::Flatten, OpKind::SoftmaxCrossEntropy};
  EXPECT_EQ(ops, expected);
  EXPECT_EQ(std::get<ScaleAttrs>(layer(g, "gn.weight").attrs).shape, (Shape{4, 1, 1}));
  EXPECT_EQ(std::get<ScaleAttrs>(layer(g, "gn.weight").attrs).weight_shape, (Shape{4}));
  EXPECT_EQ(imported.weights.at("gn.bias").parameters.at(0).shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(std::get<PReluAttrs>(layer(g, "act").attrs).num_parameters, 4);
  EXPECT_FALSE(std::get<InstanceNormAttrs>(g.layer(2).attrs).affine);
  EXPECT_EQ(std::get<PadAttrs>(g.layer(7).attrs).mode, "reflect");
  EXPECT_EQ(g.info(7).output_shape, (Shape{4, 6, 6}));
  EXPECT_EQ(g.info(8).output_shape, (Shape{4, 12, 12}));
  EXPECT_EQ(g.total_params(), 12);
}

TEST(OnnxImport, LeakyReluEluTanhAndSoftplus) {
  // As torch writes nn.LeakyReLU(0.2), nn.ELU() (alpha by default), nn.Tanh, nn.Softplus().
  OnnxModel m({6});
  auto* leaky = m.node("LeakyRelu", {"input"}, {"a"});
  auto* slope = leaky->add_attribute();
  slope->set_name("alpha");
  slope->set_type(onnx::AttributeProto::FLOAT);
  slope->set_f(0.2f);
  m.node("Elu", {"a"}, {"b"});
  m.node("Tanh", {"b"}, {"c"});
  m.node("Softplus", {"c"}, {"output"});
  m.output("output");
  const Graph g = m.import().graph;
  EXPECT_NEAR(std::get<LeakyReluAttrs>(layer(g, "LeakyRelu_0").attrs).negative_slope, 0.2, 1e-7);
  EXPECT_EQ(std::get<EluAttrs>(layer(g, "Elu_1").attrs).alpha, 1.0);
  EXPECT_EQ(layer(g, "Tanh_2").op(), OpKind::Tanh);
  EXPECT_EQ(layer(g, "Softplus_3").op(), OpKind::Softplus);
  EXPECT_EQ(g.info(*g.find("Softplus_3")).output_shape, (Shape{6}));
}


// shufflenet's channel shuffle as torch 1.13 writes it for x [batch, 4, 2, 2], 2 groups:
//   b, c = Shape(x)[0], Shape(x)[1]; target = Concat(b, 2, c / 2, 2, 2) -> Reshape
//   -> Transpose(0, 2, 1, 3, 4) -> Reshape to Concat(b, -1, 2, 2);
// then a split of the channels with Slice [0, 2) and [2, INT64_MAX), and x.mean([2, 3]).
// Folded: batch is 1*batch+0, c / 2 = 2, so the reshapes are per-sample [2, 2, 2, 2] and
// [4, 2, 2] (the -1: 16 / 4), the transpose per-sample [1, 0, 2, 3].
OnnxModel channel_shuffle() {
  OnnxModel m({4, 2, 2});
  m.node("Shape", {"input"}, {"shape"});
  m.node("Gather", {"shape", ints(m, "zero", {0}, true)}, {"b"});
  m.node("Gather", {"shape", ints(m, "one", {1}, true)}, {"c"});
  m.node("Div", {"c", ints(m, "two", {2}, true)}, {"half"});
  m.node("Unsqueeze", {"b", ints(m, "axes", {0})}, {"b1"});
  m.node("Unsqueeze", {"half", "axes"}, {"half1"});
  auto* concat = m.node("Concat", {"b1", ints(m, "groups", {2}), "half1", ints(m, "hw", {2, 2})}, {"target"});
  set_int(concat, "axis", 0);
  m.node("Reshape", {"input", "target"}, {"grouped"});
  auto* transpose = m.node("Transpose", {"grouped"}, {"swapped"});
  set_ints(transpose, "perm", {0, 2, 1, 3, 4});
  auto* back = m.node("Concat", {"b1", ints(m, "rest", {-1, 2, 2})}, {"flat_target"});
  set_int(back, "axis", 0);
  m.node("Reshape", {"swapped", "flat_target"}, {"shuffled"});
  m.node("Slice", {"shuffled", ints(m, "s0", {0}), ints(m, "e0", {2}), ints(m, "ax", {1})}, {"left"});
  m.node("Slice", {"shuffled", "e0", ints(m, "e1", {INT64_MAX}), "ax"}, {"right"});
  auto* join = m.node("Concat", {"right", "left"}, {"joined"});
  set_int(join, "axis", 1);
  auto* mean = m.node("ReduceMean", {"joined"}, {"output"});
  set_ints(mean, "axes", {2, 3});
  set_int(mean, "keepdims", 0);
  m.output("output");
  return m;
}

TEST(OnnxImport, ShapeArithmeticFoldsIntoPerSampleShapeOps) {
  const Graph g = channel_shuffle().import().graph;
  EXPECT_EQ(std::get<ReshapeAttrs>(layer(g, "Reshape_7").attrs).shape, (Shape{2, 2, 2, 2}));
  EXPECT_EQ(std::get<TransposeAttrs>(layer(g, "Transpose_8").attrs).perm, (Shape{1, 0, 2, 3}));
  EXPECT_EQ(g.info(*g.find("Reshape_10")).output_shape, (Shape{4, 2, 2}));
  const auto& right = std::get<SliceAttrs>(layer(g, "Slice_12").attrs);
  EXPECT_EQ(right.start, 2);
  EXPECT_EQ(right.end, 4);  // INT64_MAX clamped to the size, as ONNX does
  EXPECT_EQ(g.info(*g.find("ReduceMean_14")).output_shape, (Shape{4}));
  // The integer nodes became no layer: input, 2 reshapes, transpose, 2 slices, concat,
  // mean and the loss.
  EXPECT_EQ(g.size(), 9u);
}

// torch 2.x writes unflatten's dim as Mod(Add(-1, rank), rank). Mod folds with ONNX's
// signs: fmod = 0 (the default) takes the divisor's sign (-6 mod 4 = 2), fmod = 1 the
// dividend's (6 fmod -4 = 2); either way here the target is per-sample [2, 8].
TEST(OnnxImport, ShapeArithmeticFoldsModWithOnnxsSigns) {
  for (const int64_t fmod : {0, 1}) {
    OnnxModel m({4, 2, 2});
    m.node("Shape", {"input"}, {"shape"});
    m.node("Gather", {"shape", ints(m, "zero", {0}, true)}, {"b"});
    m.node("Unsqueeze", {"b", ints(m, "axes", {0})}, {"b1"});
    auto* mod = fmod == 0 ? m.node("Mod", {ints(m, "x", {-6}), ints(m, "y", {4})}, {"two"})
                          : m.node("Mod", {ints(m, "x", {6}), ints(m, "y", {-4})}, {"two"});
    set_int(mod, "fmod", fmod);
    auto* target = m.node("Concat", {"b1", "two", ints(m, "eight", {8})}, {"target"});
    set_int(target, "axis", 0);
    m.node("Reshape", {"input", "target"}, {"pairs"});
    auto* mean = m.node("ReduceMean", {"pairs"}, {"output"});
    set_ints(mean, "axes", {2});
    set_int(mean, "keepdims", 0);
    m.output("output");
    const Graph g = m.import().graph;
    EXPECT_EQ(g.info(*g.find("Reshape_5")).output_shape, (Shape{2, 8})) << "fmod " << fmod;
  }
}

// torch 2.x slices shapes (Slice on integers): Shape(x)[1:2] of x [batch, 4, 2, 2] is [4],
// and a start past the end gives no values (an empty piece of a Concat).
TEST(OnnxImport, ShapeArithmeticSlicesIntegers) {
  OnnxModel m({4, 2, 2});
  m.node("Shape", {"input"}, {"shape"});
  m.node("Gather", {"shape", ints(m, "zero", {0}, true)}, {"b"});
  m.node("Unsqueeze", {"b", ints(m, "axes", {0})}, {"b1"});
  m.node("Slice", {"shape", ints(m, "one", {1}), ints(m, "two", {2})}, {"channels"});
  m.node("Slice", {"shape", ints(m, "nine", {9}), ints(m, "end", {INT64_MAX})}, {"nothing"});
  auto* target = m.node("Concat", {"b1", "channels", "nothing", ints(m, "four", {4})}, {"target"});
  set_int(target, "axis", 0);
  m.node("Reshape", {"input", "target"}, {"square"});
  auto* mean = m.node("ReduceMean", {"square"}, {"output"});
  set_ints(mean, "axes", {2});
  set_int(mean, "keepdims", 0);
  m.output("output");
  const Graph g = m.import().graph;
  EXPECT_EQ(g.info(*g.find("Reshape_6")).output_shape, (Shape{4, 4}));
}

TEST(OnnxImport, ShapeArithmeticThatDependsOnTheBatchIsRefused) {
  // Taking Shape(x)[1] in place of [0] makes the first target dim c = 4: the batch would
  // be reshaped into the samples.
  OnnxModel m({4, 2, 2});
  m.node("Shape", {"input"}, {"shape"});
  m.node("Gather", {"shape", ints(m, "zero", {0}, true)}, {"b"});
  m.node("Unsqueeze", {"b", ints(m, "axes", {0})}, {"b1"});
  auto* concat = m.node("Concat", {ints(m, "four", {4}), "b1", ints(m, "hw", {2, 2})}, {"target"});
  set_int(concat, "axis", 0);
  m.node("Reshape", {"input", "target"}, {"output"});
  m.output("output");
  expect_refused(m.bytes(), "target shape [4, batch, 2, 2] does not keep the batch as its first dim");
}

TEST(OnnxImport, Opset17LayerNormalizationIsALayerNorm) {
  // Tokens [4, 6] per sample; LayerNormalization over the last dim (eps 1e-6, as ViT's),
  // the mean over tokens -> [6], Gemm to 3 logits.
  OnnxModel m({4, 6}, 17);
  auto* norm = m.node("LayerNormalization", {"input", m.weight("ln.weight", {6}, 1), m.weight("ln.bias", {6}, 0)}, {"n"});
  auto* eps = norm->add_attribute();
  eps->set_name("epsilon");
  eps->set_type(onnx::AttributeProto::FLOAT);
  eps->set_f(1e-6f);
  auto* mean = m.node("ReduceMean", {"n"}, {"pooled"});
  set_ints(mean, "axes", {1});
  set_int(mean, "keepdims", 0);
  auto* gemm = m.node("Gemm", {"pooled", m.weight("head.weight", {3, 6}), m.weight("head.bias", {3})}, {"output"});
  set_int(gemm, "transB", 1);
  m.output("output");
  const ImportedModel imported = m.import();
  const auto& ln = std::get<LayerNormAttrs>(layer(imported.graph, "ln").attrs);
  EXPECT_EQ(ln.eps, 1e-6);  // the float attribute read as its shortest decimal
  EXPECT_EQ(imported.weights.at("ln").parameters.size(), 2u);
  // Parameters: ln 2*6 = 12, head 3*6 + 3 = 21.
  EXPECT_EQ(imported.graph.total_params(), 33);
}


TEST(OnnxImport, MalformedFilesAreRefusedWithOneLine) {
  const std::string good = tiny_resnet().bytes();
  ASSERT_EQ(refusal(good), "");
  expect_refused(good.substr(0, good.size() / 2), "not an ONNX model");
  std::mt19937 random(7);
  for (int trial = 0; trial < 50; ++trial) {  // random bytes: refused whatever they parse as
    std::string noise(1 + random() % 4096, '\0');
    for (char& c : noise) c = static_cast<char>(random());
    EXPECT_NE(refusal(noise), "");
  }
  for (const size_t cut : {size_t{1}, good.size() / 3, good.size() - 1}) {
    EXPECT_NE(refusal(good.substr(0, cut)), "") << "cut at " << cut;
  }
}

TEST(OnnxImport, StructuralErrorsNameTheNode) {
  {
    OnnxModel m({4});
    m.node("Relu", {"b"}, {"a"});
    m.node("Relu", {"a"}, {"b"});
    m.output("b");
    expect_refused(m.bytes(), "the graph has a cycle: node 'Relu_0' (Relu)");
  }
  {
    OnnxModel m({4});
    m.node("Gemm", {"input", "fc.weight"}, {"output"});
    m.output("output");
    expect_refused(m.bytes(), "node 'Gemm_0' (Gemm) reads 'fc.weight', which no node, initializer or graph input provides");
  }
  {
    OnnxModel m({4});
    m.node("GRU", {"input"}, {"a"});
    m.node("GRU", {"a"}, {"b"});
    m.node("LSTM", {"b"}, {"output"});
    m.output("output");
    expect_refused(m.bytes(), "unsupported ONNX ops at opset 14: GRU (node 'GRU_0' and 1 more); LSTM (node 'LSTM_2')");
  }
  {
    OnnxModel m({3, 8, 8});
    m.proto().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_param("height");
    m.node("Relu", {"input"}, {"output"});
    m.output("output");
    expect_refused(m.bytes(), "dimension 2 is 'height', a dynamic size burst cannot resolve");
  }
  {
    OnnxModel m({4}, 20);
    m.node("Relu", {"input"}, {"output"});
    m.output("output");
    expect_refused(m.bytes(), "opset 20 is not supported");
  }
  {
    OnnxModel m({3, 8, 8});
    auto* conv = m.node("Conv", {"input", m.weight("w", {4, 3, 3, 3})}, {"output"});
    set_ints(conv, "pads", {0, 0, 1, 1});
    m.output("output");
    expect_refused(m.bytes(), "pads 0,0,1,1 are not the same at both ends");
  }
}

TEST(OnnxImport, WeightsThatDoNotFitTheirInputAreRefused) {
  {
    OnnxModel m({4});  // features [4], but the weight is [5, 3]: it takes 3 features
    auto* gemm = m.node("Gemm", {"input", m.weight("fc.weight", {5, 3})}, {"output"});
    set_int(gemm, "transB", 1);
    m.output("output");
    expect_refused(m.bytes(), "input 'input' has per-sample shape [4]; a [5, 3] weight needs [3]");
  }
  {
    OnnxModel m({3, 8, 8});  // 3 channels, but the weight takes 2
    m.node("Conv", {"input", m.weight("conv.weight", {4, 2, 3, 3})}, {"c"});
    m.node("GlobalAveragePool", {"c"}, {"g"});
    m.node("Flatten", {"g"}, {"output"});
    m.output("output");
    expect_refused(m.bytes(), "'conv.weight' has shape [4, 2, 3, 3], expected [4, 3, 3, 3]");
  }
}

TEST(OnnxImport, InputsOfTheWrongKindAreRefusedNotDereferenced) {
  // A computed tensor plus the integers of its own shape: neither a tensor sum nor a bias.
  OnnxModel m({4});
  m.node("Shape", {"input"}, {"shape"});
  m.node("Add", {"input", "shape"}, {"output"});
  m.output("output");
  expect_refused(m.bytes(), "adds a computed tensor and integers, or two constants");
  // Sub of float tensors is not shape arithmetic.
  OnnxModel sub({4});
  sub.node("Sub", {"input", "input"}, {"output"});
  sub.output("output");
  expect_refused(sub.bytes(), "subtracts tensors; burst reads Sub of integers (shapes), of a number");
}

// Input [3, 4, 4]; a 1x1 Conv to 2 channels; Pad with mode "reflect"; pooled to logits [2].
// The tests give a name or string that reaches burst's graph or its JSON bytes that are not UTF-8.
OnnxModel conv_and_pad() {
  OnnxModel m({3, 4, 4});
  m.node("Conv", {"input", m.weight("conv.weight", {2, 3, 1, 1})}, {"c"});
  auto* pad = m.node("Pad", {"c", ints(m, "pads", {0, 0, 1, 1, 0, 0, 1, 1})}, {"padded"});
  auto* mode = pad->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("reflect");
  m.node("GlobalAveragePool", {"padded"}, {"pooled"});
  m.node("Flatten", {"pooled"}, {"output"});
  m.output("output");
  return m;
}

TEST(OnnxImport, NamesThatAreNotUtf8AreRefusedWhereTheyAreRead) {
  ASSERT_EQ(refusal(conv_and_pad().bytes()), "");
  const auto refused_after = [](const std::function<void(onnx::GraphProto&)>& damage, const std::string& message) {
    OnnxModel m = conv_and_pad();
    damage(*m.proto().mutable_graph());
    EXPECT_EQ(refusal(m.bytes()), "bad.onnx: " + message);
  };
  refused_after([](auto& g) { g.mutable_node(0)->set_name("Conv_\xfa" "0"); },
                "the name of ONNX node #0 (Conv) is not UTF-8: 'Conv_\\xfa0'");
  refused_after([](auto& g) { g.mutable_node(1)->set_op_type("P\xfa" "d"); },
                "the op type of ONNX node #1 is not UTF-8: 'P\\xfad'");
  refused_after([](auto& g) { g.mutable_node(1)->set_input(0, "c\xed\xa0\x80"); },
                "input 0 of ONNX node #1 (Pad) is not UTF-8: 'c\\xed\\xa0\\x80'");
  refused_after([](auto& g) { g.mutable_node(0)->set_output(0, "c\xc3"); },
                "output 0 of ONNX node #0 (Conv) is not UTF-8: 'c\\xc3'");
  refused_after([](auto& g) { g.mutable_initializer(0)->set_name("conv.\xc0\xaeweight"); },
                "the name of ONNX initializer #0 is not UTF-8: 'conv.\\xc0\\xaeweight'");
  refused_after([](auto& g) { g.mutable_input(0)->set_name("in\xffput"); },
                "the name of ONNX graph input #0 is not UTF-8: 'in\\xffput'");
  refused_after([](auto& g) { g.mutable_output(0)->set_name("out\xfa"); },
                "the name of ONNX graph output #0 is not UTF-8: 'out\\xfa'");
  refused_after([](auto& g) { g.mutable_node(1)->mutable_attribute(0)->set_s("refl\xfa" "ct"); },
                "node 'Pad_1' (Pad): attribute 'mode' is not UTF-8: 'refl\\xfact'");
}

TEST(OnnxImport, AFileNameThatIsNotUtf8NamesTheModelEscaped) {
  const Graph g = import_onnx_bytes(conv_and_pad().bytes(), "", "models/caf\xe9.onnx").graph;
  EXPECT_EQ(g.name(), "caf\\xe9");
  EXPECT_NO_THROW(model_to_json(g).dump());
}

TEST(OnnxImport, ALayerNamedLossKeepsItsNameAndTheAddedLossTakesAnother) {
  OnnxModel m({4});
  auto* gemm = m.node("Gemm", {"input", m.weight("onnx::Gemm_1", {3, 4})}, {"output"});
  gemm->set_name("loss");
  set_int(gemm, "transB", 1);
  m.output("output");
  const Graph g = m.import().graph;
  EXPECT_EQ(layer(g, "loss").op(), OpKind::Linear);
  EXPECT_EQ(layer(g, "loss_2").op(), OpKind::SoftmaxCrossEntropy);
}

TEST(OnnxImport, SqueezeDropsOnlyTheAxesItNames) {
  // Shape(x) of [batch, 4, 1] is [3]; Unsqueeze at 0 and 2 gives [1, 3, 1]; Squeeze axis 0
  // leaves [3, 1], whose Gather is refused as not 1-D; Squeeze without axes leaves [3].
  for (const bool with_axes : {true, false}) {
    OnnxModel m({4, 1});
    m.node("Shape", {"input"}, {"shape"});
    m.node("Unsqueeze", {"shape", ints(m, "axes", {0, 2})}, {"wide"});
    m.node("Squeeze", with_axes ? std::vector<std::string>{"wide", ints(m, "first", {0})} : std::vector<std::string>{"wide"},
           {"narrow"});
    m.node("Gather", {"narrow", ints(m, "zero", {0}, true)}, {"b"});
    m.node("Unsqueeze", {"b", ints(m, "at0", {0})}, {"b1"});
    auto* concat = m.node("Concat", {"b1", ints(m, "rest", {4})}, {"target"});
    set_int(concat, "axis", 0);
    m.node("Reshape", {"input", "target"}, {"flat"});
    auto* gemm = m.node("Gemm", {"flat", m.weight("fc.weight", {2, 4})}, {"output"});
    set_int(gemm, "transB", 1);
    m.output("output");
    if (with_axes) {
      expect_refused(m.bytes(), "burst gathers from 1-D integer tensors (shapes) only");
    } else {
      const Graph g = m.import().graph;
      EXPECT_EQ(std::get<ReshapeAttrs>(layer(g, "Reshape_6").attrs).shape, (Shape{4}));
    }
  }
}

TEST(OnnxImport, SplitIsOneSliceLayerPerOutput) {
  // x [4, 2, 2] split on the channels into [1, 3] (opset 13's sizes input): slices [0, 1)
  // and [1, 4); then channel 0 is added to the mean of the others, per pixel.
  OnnxModel m({4, 2, 2});
  auto* split = m.node("Split", {"input", ints(m, "sizes", {1, 3})}, {"one", "three"});
  set_int(split, "axis", 1);
  auto* mean = m.node("ReduceMean", {"three"}, {"others"});
  set_ints(mean, "axes", {1});
  m.node("Add", {"one", "others"}, {"sum"});
  m.node("Flatten", {"sum"}, {"output"});
  m.output("output");
  const Graph g = m.import().graph;
  const auto& first = std::get<SliceAttrs>(layer(g, "Split_0_0").attrs);
  const auto& second = std::get<SliceAttrs>(layer(g, "Split_0_1").attrs);
  EXPECT_EQ(std::make_tuple(first.axis, first.start, first.end), std::make_tuple(0, 0, 1));
  EXPECT_EQ(std::make_tuple(second.axis, second.start, second.end), std::make_tuple(0, 1, 4));
  EXPECT_EQ(g.info(*g.find("Split_0_1")).output_shape, (Shape{3, 2, 2}));
  // Sizes that do not add up to the axis are refused.
  OnnxModel bad({4, 2, 2});
  set_int(bad.node("Split", {"input", ints(bad, "sizes", {1, 2})}, {"a", "output"}), "axis", 1);
  bad.output("output");
  expect_refused(bad.bytes(), "splits 4 elements into [1, 2] for 2 outputs");
}

TEST(OnnxImport, ExternalDataIsReadBesideTheModelAndAMissingFileIsRefused) {
  OnnxModel m({4});
  auto* weight = m.proto().mutable_graph()->add_initializer();
  weight->set_name("fc.weight");
  weight->set_data_type(onnx::TensorProto::FLOAT);
  weight->add_dims(2);
  weight->add_dims(4);
  weight->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = weight->add_external_data();
  location->set_key("location");
  location->set_value("weights.bin");
  auto* gemm = m.node("Gemm", {"input", "fc.weight"}, {"output"});
  set_int(gemm, "transB", 1);
  m.output("output");
  const std::string dir = ::testing::TempDir();
  std::remove((dir + "/weights.bin").c_str());
  expect_refused(m.bytes(), "external data file '" + dir + "/weights.bin' cannot be opened", dir);
  {
    std::ofstream file(dir + "/weights.bin", std::ios::binary);
    const float values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    file.write(reinterpret_cast<const char*>(values), sizeof values / 2);  // half of it
  }
  expect_refused(m.bytes(), "holds fewer than 32 bytes", dir);
  {
    std::ofstream file(dir + "/weights.bin", std::ios::binary);
    const float values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    file.write(reinterpret_cast<const char*>(values), sizeof values);
  }
  const ImportedModel imported = import_onnx_bytes(m.bytes(), dir, "ext.onnx");
  EXPECT_EQ(imported.weights.at("fc").parameters.at(0).values.back(), 8.0f);
  std::remove((dir + "/weights.bin").c_str());
}

}  // namespace
}  // namespace burst::graph
