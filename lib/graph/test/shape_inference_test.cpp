// Per-op shapes, parameter counts and FLOPs, each derived by hand in a comment.
#include <gtest/gtest.h>

#include "burst/graph/builder.h"
#include "burst/util/error.h"
#include "test_models.h"

namespace burst::graph {
namespace {

using testing::conv;

// Builds input(shape) -> one layer named 'layer' and returns that layer's info.
LayerInfo infer(const Shape& input_shape, const Attrs& attrs) {
  GraphBuilder b("one");
  auto x = b.input("input", input_shape);
  b.add("layer", {x}, attrs);
  const Graph graph = std::move(b).build();
  return graph.info(*graph.find("layer"));
}

TEST(ShapeInference, Conv2dStridePaddingBias) {
  // resnet conv1: [3,224,224], 64 filters 7x7, stride 2, pad 3, no bias.
  // H' = floor((224 + 6 - 7) / 2) + 1 = 112. params = 64*3*7*7 = 9408.
  // FLOPs = 2 * 3*7*7 * (64*112*112) = 2 * 147 * 802816 = 236,027,904.
  const LayerInfo info = infer({3, 224, 224}, conv(64, 7, 2, 3, false));
  EXPECT_EQ(info.output_shape, (Shape{64, 112, 112}));
  EXPECT_EQ(info.params, 9408);
  EXPECT_EQ(info.forward_flops, 236027904);
  EXPECT_EQ(info.output_bytes, 64 * 112 * 112 * 4);
}

TEST(ShapeInference, Conv2dGroupsDilationAndAsymmetricKernel) {
  // Depthwise 3x3, dilation 2, pad 2 on [8,10,10]: span 5, H' = (10 + 4 - 5) / 1 + 1 = 10.
  // params = 8 * (8/8) * 9 + 8 bias = 80; FLOPs = (2*9 + 1) * 8*10*10 = 15,200.
  Conv2dAttrs depthwise = conv(8, 3, 1, 2);
  depthwise.dilation = {2, 2};
  depthwise.groups = 8;
  LayerInfo info = infer({8, 10, 10}, depthwise);
  EXPECT_EQ(info.output_shape, (Shape{8, 10, 10}));
  EXPECT_EQ(info.params, 80);
  EXPECT_EQ(info.forward_flops, 15200);
  // Inception's 1x7 with pad (0, 3) keeps [C, 17, 17]: params 192*128*7 = 172,032.
  Conv2dAttrs one_by_seven = conv(192, 1, 1, 0, false);
  one_by_seven.kernel = {1, 7};
  one_by_seven.padding = {0, 3};
  info = infer({128, 17, 17}, one_by_seven);
  EXPECT_EQ(info.output_shape, (Shape{192, 17, 17}));
  EXPECT_EQ(info.params, 172032);
}

TEST(ShapeInference, PoolsFollowPyTorchIncludingCeilMode) {
  MaxPool2dAttrs pool;
  pool.kernel = {3, 3};
  pool.stride = {2, 2};
  pool.padding = {1, 1};
  // resnet maxpool: floor((112 + 2 - 3) / 2) + 1 = 56; FLOPs = 9 per output element.
  LayerInfo info = infer({64, 112, 112}, pool);
  EXPECT_EQ(info.output_shape, (Shape{64, 56, 56}));
  EXPECT_EQ(info.forward_flops, 64 * 56 * 56 * 9);
  // ceil_mode on [1,6,6], kernel 3, stride 2, no pad: (6-3)/2 = 1.5 -> ceil 2, +1 = 3;
  // the last window starts at 4 < 6, so it is kept.
  MaxPool2dAttrs ceil_pool;
  ceil_pool.kernel = {3, 3};
  ceil_pool.stride = {2, 2};
  ceil_pool.ceil_mode = true;
  EXPECT_EQ(infer({1, 6, 6}, ceil_pool).output_shape, (Shape{1, 3, 3}));
  // Unset stride equals the kernel: [1,7,7] with a 2x2 window -> floor(5/2) + 1 = 3.
  AvgPool2dAttrs avg;
  avg.kernel = {2, 2};
  EXPECT_EQ(infer({1, 7, 7}, avg).output_shape, (Shape{1, 3, 3}));
}

TEST(ShapeInference, LinearOnSequencesAndTiedWeights) {
  // [T=4, 16] -> 32 features: params 16*32 + 32 = 544; FLOPs = 4*32 * (2*16 + 1) = 4,224.
  const LayerInfo info = infer({4, 16}, LinearAttrs{32, true, ""});
  EXPECT_EQ(info.output_shape, (Shape{4, 32}));
  EXPECT_EQ(info.params, 544);
  EXPECT_EQ(info.forward_flops, 4224);

  // A head tied to the embedding counts no weight: 100 x 8 table counted once (800).
  GraphBuilder b("tied");
  auto ids = b.token_input("ids", 5, 100);
  auto x = b.embedding("wte", ids, 100, 8);
  x = b.linear("head", x, 100, false, "wte");
  b.cross_entropy("loss", x);
  const Graph graph = std::move(b).build();
  EXPECT_EQ(graph.info(*graph.find("head")).params, 0);
  EXPECT_EQ(graph.total_params(), 800);
  EXPECT_EQ(graph.info(*graph.find("head")).output_shape, (Shape{5, 100}));
}

TEST(ShapeInference, SelfAttentionParamsAndFlops) {
  // T=4, D=8, 2 heads: params 4*64 + 4*8 = 288.
  // FLOPs = 8*T*D^2 (2048) + 4*T*D (128) + 4*T^2*D (512) + 5*H*T^2 (160) = 2,848.
  const LayerInfo info = infer({4, 8}, SelfAttentionAttrs{2, true, 0.0});
  EXPECT_EQ(info.output_shape, (Shape{4, 8}));
  EXPECT_EQ(info.params, 288);
  EXPECT_EQ(info.forward_flops, 2848);
}

TEST(ShapeInference, TokenOps) {
  // ViT: [768,14,14] -> 196 tokens of 768 -> class token 197 -> take token 0 -> [768].
  GraphBuilder b("tokens");
  auto x = b.input("image", {768, 14, 14});
  x = b.image_to_tokens("tokens", x);
  x = b.class_token("cls", x);
  x = b.position_embedding("pos", x, 197);
  x = b.layernorm("ln", x, 1e-6);
  x = b.take_token("take", x, 0);
  const Graph graph = std::move(b).build();
  EXPECT_EQ(graph.info(1).output_shape, (Shape{196, 768}));
  EXPECT_EQ(graph.info(2).output_shape, (Shape{197, 768}));
  EXPECT_EQ(graph.info(2).params, 768);
  EXPECT_EQ(graph.info(3).params, 197 * 768);
  EXPECT_EQ(graph.info(4).params, 2 * 768);
  EXPECT_EQ(graph.info(5).output_shape, (Shape{768}));
}

TEST(ShapeInference, JoinsAddAndConcat) {
  GraphBuilder b("joins");
  auto x = b.input("input", {4, 5, 5});
  auto left = b.conv2d("left", x, conv(6, 1));
  auto right = b.conv2d("right", x, conv(10, 3, 1, 1));
  auto joined = b.concat("cat", {left, right});
  b.add_("sum", {joined, joined});
  const Graph graph = std::move(b).build();
  EXPECT_EQ(graph.info(*graph.find("cat")).output_shape, (Shape{16, 5, 5}));
  EXPECT_EQ(graph.info(*graph.find("sum")).forward_flops, 16 * 5 * 5);  // one add per element
}

TEST(ShapeInference, LossIsAScalarPerSample) {
  const Graph graph = testing::tiny_cnn();
  const LayerInfo& loss = graph.info(*graph.find("loss"));
  EXPECT_TRUE(loss.output_shape.empty());
  EXPECT_EQ(loss.output_bytes, 4);
  // conv: 4*1*9 + 4 = 40 params; fc: 256*10 + 10 = 2570.
  EXPECT_EQ(graph.total_params(), 40 + 2570);
}

TEST(ShapeInference, ElementWiseActivations) {
  // On [16, 7, 7] = 784 elements the shape is kept and no parameters are added. FLOPs per
  // element: hardtanh 2 (two comparisons), sigmoid 4 (negate, exp, add, divide), silu 5
  // (sigmoid and a multiply), hardsigmoid 3 (add, clamp, scale), hardswish 4 (and a
  // multiply).
  const Shape shape{16, 7, 7};
  const std::pair<Attrs, int64_t> cases[] = {{HardtanhAttrs{0, 6}, 2}, {SigmoidAttrs{}, 4},
                                             {SiluAttrs{}, 5},         {HardsigmoidAttrs{}, 3},
                                             {HardswishAttrs{}, 4}};
  for (const auto& [attrs, per_element] : cases) {
    const LayerInfo info = infer(shape, attrs);
    EXPECT_EQ(info.output_shape, shape) << op_name(op_kind(attrs));
    EXPECT_EQ(info.params, 0);
    EXPECT_EQ(info.forward_flops, per_element * 784) << op_name(op_kind(attrs));
  }
}

TEST(ShapeInference, MulBroadcastsSqueezeExcitation) {
  // Squeeze-excitation: features [32, 14, 14] times channel weights [32, 1, 1] (pooled to
  // 1x1 by a conv-free path here: adaptive pool). The product is [32, 14, 14]: one multiply
  // per output element, 32*14*14 = 6272 FLOPs.
  GraphBuilder b("se");
  auto x = b.input("input", {32, 14, 14});
  auto pooled = b.adaptive_avgpool2d("pool", x, {1, 1});
  auto gate = b.add("gate", {pooled}, SigmoidAttrs{});
  b.add("scale", {x, gate}, MulAttrs{});
  const Graph graph = std::move(b).build();
  const LayerInfo& scale = graph.info(*graph.find("scale"));
  EXPECT_EQ(scale.output_shape, (Shape{32, 14, 14}));
  EXPECT_EQ(scale.forward_flops, 6272);
  // Broadcasting goes both ways: [1, 5] x [3, 1] -> [3, 5].
  GraphBuilder both("both");
  auto row = both.input("row", {1, 5});
  auto column = both.input("column", {3, 1});
  both.add("outer", {row, column}, MulAttrs{});
  const Graph outer = std::move(both).build();
  EXPECT_EQ(outer.info(*outer.find("outer")).output_shape, (Shape{3, 5}));
}

TEST(ShapeInference, MulRefusesShapesThatDoNotBroadcast) {
  for (const Shape& other : {Shape{32, 2, 1}, Shape{32}}) {
    GraphBuilder b("bad");
    auto x = b.input("x", {32, 14, 14});
    auto y = b.input("y", other);
    b.add("layer", {x, y}, MulAttrs{});
    try {
      std::move(b).build();
      FAIL() << "expected a broadcasting error";
    } catch (const UserError& error) {
      EXPECT_NE(std::string(error.what()).find("do not broadcast"), std::string::npos) << error.what();
    }
  }
}

TEST(ShapeInference, MatmulAndSoftmaxOfAttentionScores) {
  // Per sample, queries [2, 5, 4] (2 heads, 5 tokens, 4 features) times keys transposed
  // [2, 4, 5]: scores [2, 5, 5], each a sum of 4 products: 2 x 4 FLOPs for each of the 50
  // scores = 400. Softmax over the last dim: 5 FLOPs for each of 50 elements = 250. Then the
  // weights [2, 5, 5] times values [2, 5, 4]: [2, 5, 4], 2 x 5 x 40 = 400.
  GraphBuilder b("scores");
  auto q = b.input("q", {2, 5, 4});
  auto k = b.input("k", {2, 4, 5});
  auto v = b.input("v", {2, 5, 4});
  auto scores = b.add("scores", {q, k}, MatmulAttrs{});
  auto weights = b.add("weights", {scores}, SoftmaxAttrs{});
  b.add("mixed", {weights, v}, MatmulAttrs{});
  const Graph graph = std::move(b).build();
  EXPECT_EQ(graph.info(*graph.find("scores")).output_shape, (Shape{2, 5, 5}));
  EXPECT_EQ(graph.info(*graph.find("scores")).forward_flops, 400);
  EXPECT_EQ(graph.info(*graph.find("weights")).forward_flops, 250);
  EXPECT_EQ(graph.info(*graph.find("mixed")).output_shape, (Shape{2, 5, 4}));
  EXPECT_EQ(graph.info(*graph.find("mixed")).forward_flops, 400);
  // Inner dims that differ (4 against 5), or leading dims that differ, are refused.
  for (const Shape& other : {Shape{2, 5, 5}, Shape{3, 4, 5}}) {
    GraphBuilder bad("bad");
    auto x = bad.input("x", {2, 5, 4});
    auto y = bad.input("y", other);
    bad.add("product", {x, y}, MatmulAttrs{});
    try {
      std::move(bad).build();
      FAIL() << "expected a matmul shape error";
    } catch (const UserError& error) {
      EXPECT_NE(std::string(error.what()).find("do not multiply"), std::string::npos) << error.what();
    }
  }
}

TEST(ShapeInference, VolumesThroughConv3dBatchNormAndPools) {
  // A volume [2, 8, 8, 8]: Conv3d to 4 channels, kernel 3, padding 1 keeps 8^3; weight
  // 4 x 2 x 27 = 216 plus 4 bias; each of the 4 x 512 outputs is 2 x 54 + 1 = 109 FLOPs
  // (223,232). BatchNorm of [4, 8, 8, 8]: 8 parameters. MaxPool3d 2 -> [4, 4, 4, 4], a
  // 2 x 2 x 2 window per output (2,048 FLOPs). AvgPool3d kernel [1, 2, 2], stride
  // [1, 2, 2], padding 0 -> [4, 4, 2, 2].
  GraphBuilder b("volume");
  auto x = b.input("input", {2, 8, 8, 8});
  Conv3dAttrs conv;
  conv.out_channels = 4;
  conv.kernel = {3, 3, 3};
  conv.padding = {1, 1, 1};
  auto c = b.add("conv", {x}, conv);
  auto n = b.add("bn", {c}, BatchNorm2dAttrs{});
  MaxPool3dAttrs max;
  max.kernel = {2, 2, 2};
  auto m = b.add("max", {n}, max);
  AvgPool3dAttrs avg;
  avg.kernel = {1, 2, 2};
  b.add("avg", {m}, avg);
  const Graph graph = std::move(b).build();
  const auto info = [&](const char* name) { return graph.info(*graph.find(name)); };
  EXPECT_EQ(info("conv").output_shape, (Shape{4, 8, 8, 8}));
  EXPECT_EQ(info("conv").params, 220);
  EXPECT_EQ(info("conv").forward_flops, 4 * 512 * 109);
  EXPECT_EQ(info("bn").params, 8);
  EXPECT_EQ(info("max").output_shape, (Shape{4, 4, 4, 4}));
  EXPECT_EQ(info("max").forward_flops, 256 * 8);
  EXPECT_EQ(info("avg").output_shape, (Shape{4, 4, 2, 2}));
  // A 2-value kernel, or a volume op on an image, is refused naming the layer.
  GraphBuilder bad("bad");
  auto image = bad.input("image", {2, 8, 8});
  bad.add("conv", {image}, conv);
  try {
    std::move(bad).build();
    FAIL() << "expected a rank error";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("expected [C, D, H, W]"), std::string::npos) << error.what();
  }
}

TEST(ShapeInference, ShapeOpsOfChannelShuffle) {
  // shufflenet's channel shuffle on [116, 28, 28] with 2 groups: reshape to [2, 58, 28, 28]
  // (same 90,944 elements), transpose the group and channel dims (perm [1, 0, 2, 3] ->
  // [58, 2, 28, 28]), reshape back to [116, 28, 28]; its split takes channels [0, 58) and
  // [58, 116). None computes anything: 0 FLOPs, 0 parameters.
  GraphBuilder b("shuffle");
  auto x = b.input("input", {116, 28, 28});
  auto grouped = b.add("grouped", {x}, ReshapeAttrs{{2, 58, 28, 28}});
  auto swapped = b.add("swapped", {grouped}, TransposeAttrs{{1, 0, 2, 3}});
  auto shuffled = b.add("shuffled", {swapped}, ReshapeAttrs{{116, 28, 28}});
  b.add("first", {shuffled}, SliceAttrs{0, 0, 58});
  b.add("second", {shuffled}, SliceAttrs{0, 58, 116});
  const Graph g = std::move(b).build();
  EXPECT_EQ(g.info(*g.find("swapped")).output_shape, (Shape{58, 2, 28, 28}));
  EXPECT_EQ(g.info(*g.find("shuffled")).output_shape, (Shape{116, 28, 28}));
  EXPECT_EQ(g.info(*g.find("second")).output_shape, (Shape{58, 28, 28}));
  EXPECT_EQ(g.info(*g.find("second")).forward_flops, 0);
  EXPECT_EQ(g.total_params(), 0);
}

TEST(ShapeInference, MeanOverAxes) {
  // x.mean([1, 2]) on [1024, 7, 7]: [1024], one add per input element, 50,176 FLOPs; with
  // keepdims [1024, 1, 1].
  EXPECT_EQ(infer({1024, 7, 7}, MeanAttrs{{1, 2}, false}).output_shape, (Shape{1024}));
  EXPECT_EQ(infer({1024, 7, 7}, MeanAttrs{{1, 2}, false}).forward_flops, 50176);
  EXPECT_EQ(infer({1024, 7, 7}, MeanAttrs{{2, 1}, true}).output_shape, (Shape{1024, 1, 1}));
}

void expect_error(const Shape& input_shape, const Attrs& attrs, const std::string& fragment) {
  try {
    infer(input_shape, attrs);
    FAIL() << "expected an error containing: " << fragment;
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("layer 'layer'"), std::string::npos) << error.what();
  }
}

TEST(ShapeInference, ErrorsNameTheLayerAndTheProblem) {
  expect_error({3, 8}, conv(4, 3), "expected [C, H, W]");
  expect_error({3, 8, 8}, conv(0, 3), "out_channels must be positive");
  expect_error({3, 8, 8}, conv(4, 9), "kernel span 9 exceeds padded input height 8");
  Conv2dAttrs grouped = conv(4, 1);
  grouped.groups = 2;
  expect_error({3, 8, 8}, grouped, "groups 2 must divide in_channels 3");
  expect_error({3, 8, 8}, conv(int64_t{1} << 62, 3, 1, 1), "overflows int64");
  expect_error({4, 10}, SelfAttentionAttrs{3, false, 0.0}, "not divisible by 3 heads");
  expect_error({3, 8, 8}, TakeTokenAttrs{0}, "expected [T, D]");
  expect_error({5}, PositionEmbeddingAttrs{4}, "expected [T, D]");
  expect_error({6, 4}, PositionEmbeddingAttrs{4}, "sequence length 6 exceeds max_positions 4");
  expect_error({3, 8, 8}, DropoutAttrs{1.5}, "p must be in [0, 1)");
  expect_error({2, 3, 4, 5}, SoftmaxCrossEntropyAttrs{1.0}, "expected [classes] or [T, classes]");
  expect_error({3, 8, 8}, EmbeddingAttrs{10, 4}, "expected int64 token ids");
  expect_error({3, 8, 8}, HardtanhAttrs{6, 0}, "min_val 6 must be below max_val 0");
  expect_error({3, 8, 8}, ReshapeAttrs{{3, 65}}, "shape [3, 65] holds 195 elements, input [3, 8, 8] holds 192");
  expect_error({3, 8, 8}, TransposeAttrs{{0, 0, 1}}, "is not a permutation");
  expect_error({3, 8, 8}, SliceAttrs{0, 2, 2}, "is not a non-empty range of axis 0");
  expect_error({3, 8, 8}, SliceAttrs{3, 0, 1}, "axis 3 is outside");
  expect_error({3, 8, 8}, MeanAttrs{{1, 1}, false}, "must be distinct dims");
}

}  // namespace
}  // namespace burst::graph
