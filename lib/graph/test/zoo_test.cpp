// Zoo models: parameter counts against torchvision / Hugging Face (derived by hand below),
// per-layer shapes at torchvision's module names, options, and option errors.
#include <set>
#include <string>
#include <variant>

#include <gtest/gtest.h>

#include "burst/graph/zoo.h"
#include "burst/util/error.h"

namespace burst::graph {
namespace {

// Output shape of the layer `name`; fails the test if the layer is missing.
Shape shape_of(const Graph& graph, const std::string& name) {
  const auto id = graph.find(name);
  EXPECT_TRUE(id.has_value()) << "no layer '" << name << "' in " << graph.name();
  return id ? graph.info(*id).output_shape : Shape{};
}

int64_t params_of(const Graph& graph, const std::string& name) {
  const auto id = graph.find(name);
  EXPECT_TRUE(id.has_value()) << "no layer '" << name << "' in " << graph.name();
  return id ? graph.info(*id).params : -1;
}

TEST(ZooTest, EveryEntryBuildsWithDefaults) {
  std::set<std::string> names;
  for (const auto& entry : zoo_entries()) {
    SCOPED_TRACE(entry.name);
    EXPECT_TRUE(names.insert(entry.name).second) << "duplicate entry";
    EXPECT_TRUE(is_zoo_model(entry.name));
    const Graph graph = build_zoo_model(entry.name);
    EXPECT_EQ(graph.name(), entry.name);
    EXPECT_GT(graph.total_params(), 0);
    EXPECT_GT(graph.total_forward_flops(), 0);
    EXPECT_TRUE(graph.find("loss").has_value());
  }
  for (const char* name :
       {"vgg11", "vgg13", "vgg16", "vgg19", "resnet50", "wide_resnet50_2", "wide_resnet101_2",
        "resnet", "inception_v3", "vit_b_16", "gpt2", "fmnist_cnn"}) {
    EXPECT_EQ(names.count(name), 1u) << name;
  }
}

// Convs (3x3, bias): 1,792 + 36,928 + 73,856 + 147,584 + 295,168 + 2 x 590,080 + 1,180,160
// + 5 x 2,359,808 = 14,714,688. Classifier: 25,088 x 4,096 + 4,096 + 4,096 x 4,096 + 4,096
// + 4,096 x 1,000 + 1,000 = 123,642,856. Sum 138,357,544 (torchvision's vgg16).
TEST(ZooTest, Vgg16) {
  const Graph g = build_zoo_model("vgg16");
  EXPECT_EQ(g.total_params(), 138'357'544);
  EXPECT_EQ(shape_of(g, "features.0"), (Shape{64, 224, 224}));  // pad 1 keeps 224
  EXPECT_EQ(shape_of(g, "features.4"), (Shape{64, 112, 112}));  // first pool
  EXPECT_EQ(shape_of(g, "features.30"), (Shape{512, 7, 7}));    // 224 / 2^5
  EXPECT_EQ(shape_of(g, "flatten"), (Shape{25088}));            // 512 x 7 x 7
  EXPECT_EQ(shape_of(g, "classifier.6"), (Shape{1000}));
}

// The classifier (123,642,856) is the same at every depth; depths differ only in convs.
TEST(ZooTest, VggDepths) {
  // vgg11 convs: 1,792 + 73,856 + 295,168 + 590,080 + 1,180,160 + 3 x 2,359,808 = 9,220,480.
  EXPECT_EQ(build_zoo_model("vgg11").total_params(), 9'220'480 + 123'642'856);
  // vgg19 adds one 256->256 and two more 512->512 convs to vgg16's.
  EXPECT_EQ(build_zoo_model("vgg19").total_params(), 138'357'544 + 590'080 + 2 * 2'359'808);
  // At 64x64 the features end at [512, 2, 2]; the adaptive pool still gives [512, 7, 7], so
  // the params are torchvision's vgg13 at any size.
  const Graph vgg13 = build_zoo_model("vgg13:image_size=64");
  EXPECT_EQ(shape_of(vgg13, "avgpool"), (Shape{512, 7, 7}));
  EXPECT_EQ(vgg13.total_params(), 133'047'848);
}

// A bottleneck block with input c_in, inner width w, output 4p (p = planes), BN = 2 params
// per channel: c_in*w + 2w + 9w^2 + 2w + w*4p + 2*4p (+ c_in*4p + 2*4p for the projection).
// Stem 3*64*49 + 128 = 9,536; fc 2,048*1,000 + 1,000 = 2,049,000. Summed over [3, 4, 6, 3]
// blocks this gives torchvision's 25,557,032 (w = p) and 68,883,240 (w = 2p).
TEST(ZooTest, ResNet50) {
  const Graph g = build_zoo_model("resnet50");
  EXPECT_EQ(g.total_params(), 25'557'032);
  // 224 -> conv1 /2 -> 112 -> maxpool /2 -> 56; layer1 keeps 56 (stride 1).
  EXPECT_EQ(shape_of(g, "conv1"), (Shape{64, 112, 112}));
  EXPECT_EQ(shape_of(g, "maxpool"), (Shape{64, 56, 56}));
  EXPECT_EQ(shape_of(g, "layer1.0.conv1"), (Shape{64, 56, 56}));
  EXPECT_EQ(shape_of(g, "layer1.0.conv3"), (Shape{256, 56, 56}));
  EXPECT_EQ(shape_of(g, "layer1.0.downsample.1"), (Shape{256, 56, 56}));
  // v1.5: layer2.0's 1x1 conv1 keeps 56; the stride is on the 3x3 conv2.
  EXPECT_EQ(shape_of(g, "layer2.0.conv1"), (Shape{128, 56, 56}));
  EXPECT_EQ(shape_of(g, "layer2.0.conv2"), (Shape{128, 28, 28}));
  EXPECT_EQ(shape_of(g, "layer4.2.relu3"), (Shape{2048, 7, 7}));
  EXPECT_EQ(shape_of(g, "avgpool"), (Shape{2048, 1, 1}));
  EXPECT_EQ(shape_of(g, "fc"), (Shape{1000}));
  // Blocks after the first in a stage have no projection shortcut.
  EXPECT_FALSE(g.find("layer1.1.downsample.0").has_value());
  EXPECT_EQ(params_of(g, "fc"), 2048 * 1000 + 1000);
}

TEST(ZooTest, WideResNets) {
  const Graph g50 = build_zoo_model("wide_resnet50_2");
  EXPECT_EQ(g50.total_params(), 68'883'240);
  EXPECT_EQ(shape_of(g50, "layer1.0.conv1"), (Shape{128, 56, 56}));  // 2 x 64 inner width
  EXPECT_EQ(shape_of(g50, "layer1.0.conv3"), (Shape{256, 56, 56}));  // output unchanged
  EXPECT_EQ(build_zoo_model("wide_resnet101_2").total_params(), 126'886'696);
}

TEST(ZooTest, GenericResNetMatchesNamedVariants) {
  EXPECT_EQ(build_zoo_model("resnet").total_params(), 25'557'032);  // depth 50 default
  EXPECT_EQ(build_zoo_model("resnet:depth=101,width_per_group=128").total_params(), 126'886'696);
  // torchvision resnet18: BasicBlocks [2, 2, 2, 2], fc 512 -> 1000.
  const Graph r18 = build_zoo_model("resnet:depth=18");
  EXPECT_EQ(r18.total_params(), 11'689'512);
  EXPECT_EQ(shape_of(r18, "layer4.1.relu2"), (Shape{512, 7, 7}));
  EXPECT_EQ(build_zoo_model("resnet:depth=34").total_params(), 21'797'672);
  EXPECT_EQ(build_zoo_model("resnet:depth=152").total_params(), 60'192'808);
}

TEST(ZooTest, ResNetOptions) {
  // fc is 2048 x classes + classes: 10 classes removes 2,049 x 990 = 2,028,510 params.
  const Graph g = build_zoo_model("resnet50:classes=10");
  EXPECT_EQ(g.total_params(), 25'557'032 - 2049 * 990);
  EXPECT_EQ(shape_of(g, "fc"), (Shape{10}));
  // 160 -> 80 -> 40 (layer1) -> 20 -> 10 -> 5 (layer4); params do not depend on size.
  const Graph small = build_zoo_model("resnet50:image_size=160");
  EXPECT_EQ(shape_of(small, "layer4.2.relu3"), (Shape{2048, 5, 5}));
  EXPECT_EQ(small.total_params(), 25'557'032);
}

// torchvision's inception_v3(aux_logits=True): 27,161,264 params, of which AuxLogits has
// conv0 768*128 + 256 (bn) = 98,560, conv1 128*768*25 + 1,536 = 2,459,136 and fc
// 768*1,000 + 1,000 = 769,000: 3,326,696.
TEST(ZooTest, InceptionV3) {
  const Graph g = build_zoo_model("inception_v3");
  EXPECT_EQ(g.total_params(), 27'161'264);
  // 299 -> 3x3/2: 149 -> 3x3: 147 -> pool 3/2: 73 -> 3x3: 71 -> pool 3/2: 35.
  EXPECT_EQ(shape_of(g, "Conv2d_1a_3x3.conv"), (Shape{32, 149, 149}));
  EXPECT_EQ(shape_of(g, "maxpool1"), (Shape{64, 73, 73}));
  EXPECT_EQ(shape_of(g, "maxpool2"), (Shape{192, 35, 35}));
  // Mixed_5b: 64 + 64 + 96 + 32 (pool_features) = 256.
  EXPECT_EQ(shape_of(g, "Mixed_5b.concat"), (Shape{256, 35, 35}));
  EXPECT_EQ(shape_of(g, "Mixed_5b.branch_pool.conv"), (Shape{32, 35, 35}));
  // Mixed_6a: 384 + 96 + 288 (max pool passes the input through) = 768 at (35-3)/2+1 = 17.
  EXPECT_EQ(shape_of(g, "Mixed_6a.concat"), (Shape{768, 17, 17}));
  EXPECT_EQ(shape_of(g, "Mixed_6e.concat"), (Shape{768, 17, 17}));
  // Aux: 5x5/3 pool (17-5)/3+1 = 5, 5x5 conv -> 1.
  EXPECT_EQ(shape_of(g, "AuxLogits.avg_pool"), (Shape{768, 5, 5}));
  EXPECT_EQ(shape_of(g, "AuxLogits.conv1.conv"), (Shape{768, 1, 1}));
  EXPECT_EQ(shape_of(g, "AuxLogits.fc"), (Shape{1000}));
  // Mixed_7a: 320 + 192 + 768 = 1280 at 8; Mixed_7c: 320 + 768 + 768 + 192 = 2048.
  EXPECT_EQ(shape_of(g, "Mixed_7a.concat"), (Shape{1280, 8, 8}));
  EXPECT_EQ(shape_of(g, "Mixed_7b.branch3x3_concat"), (Shape{768, 8, 8}));
  EXPECT_EQ(shape_of(g, "Mixed_7c.concat"), (Shape{2048, 8, 8}));
  EXPECT_EQ(shape_of(g, "fc"), (Shape{1000}));

  const auto aux_loss = g.find("AuxLogits.loss");
  ASSERT_TRUE(aux_loss.has_value());
  EXPECT_DOUBLE_EQ(std::get<SoftmaxCrossEntropyAttrs>(g.layer(*aux_loss).attrs).weight, 0.4);
  EXPECT_DOUBLE_EQ(std::get<SoftmaxCrossEntropyAttrs>(g.layer(*g.find("loss")).attrs).weight, 1.0);
}

TEST(ZooTest, InceptionV3Options) {
  const Graph no_aux = build_zoo_model("inception_v3:aux_logits=false");
  EXPECT_EQ(no_aux.total_params(), 27'161'264 - 3'326'696);
  EXPECT_FALSE(no_aux.find("AuxLogits.fc").has_value());
  // 75 is torchvision's minimum: Mixed_6e is 3x3, Mixed_7c 1x1.
  const Graph tiny = build_zoo_model("inception_v3:image_size=75,aux_logits=false");
  EXPECT_EQ(shape_of(tiny, "Mixed_7c.concat"), (Shape{2048, 1, 1}));
  // The aux head needs Mixed_6e >= 17x17, i.e. images >= 299.
  EXPECT_THROW(build_zoo_model("inception_v3:image_size=224"), UserError);
  EXPECT_THROW(build_zoo_model("inception_v3:image_size=74,aux_logits=false"), UserError);
}

// Patchify 768*3*16*16 + 768 = 590,592; class token 768; positions 197*768 = 151,296.
// A block: 2 layernorms 4*768 = 3,072; attention 4*768^2 + 4*768 = 2,362,368; MLP
// 2*768*3,072 + 3,072 + 768 = 4,722,432; total 7,087,872, x 12 = 85,054,464.
// Final layernorm 1,536; head 768,000 + 1,000. Sum: 86,567,656 (torchvision's vit_b_16).
TEST(ZooTest, VitB16) {
  const Graph g = build_zoo_model("vit_b_16");
  EXPECT_EQ(g.total_params(), 86'567'656);
  EXPECT_EQ(shape_of(g, "conv_proj"), (Shape{768, 14, 14}));  // 224 / 16 = 14
  EXPECT_EQ(shape_of(g, "image_to_tokens"), (Shape{196, 768}));
  EXPECT_EQ(shape_of(g, "class_token"), (Shape{197, 768}));
  EXPECT_EQ(shape_of(g, "encoder.layers.encoder_layer_0.self_attention"), (Shape{197, 768}));
  EXPECT_EQ(shape_of(g, "encoder.layers.encoder_layer_0.mlp.0"), (Shape{197, 3072}));
  EXPECT_EQ(shape_of(g, "encoder.layers.encoder_layer_11.mlp.4"), (Shape{197, 768}));
  EXPECT_EQ(shape_of(g, "encoder.ln"), (Shape{197, 768}));
  EXPECT_EQ(shape_of(g, "heads.head"), (Shape{1000}));
  EXPECT_EQ(params_of(g, "encoder.pos_embedding"), 197 * 768);
}

TEST(ZooTest, VitOptions) {
  // 384 / 16 = 24: 577 tokens, so the position table grows by 380 x 768 = 291,840.
  const Graph g = build_zoo_model("vit_b_16:image_size=384");
  EXPECT_EQ(g.total_params(), 86'567'656 + 380 * 768);
  EXPECT_EQ(shape_of(g, "encoder.ln"), (Shape{577, 768}));
  // Each block dropped removes 7,087,872 params.
  EXPECT_EQ(build_zoo_model("vit_b_16:layers=6").total_params(), 86'567'656 - 6 * 7'087'872);
  EXPECT_THROW(build_zoo_model("vit_b_16:image_size=225"), UserError);  // 225 % 16 != 0
  EXPECT_THROW(build_zoo_model("vit_b_16:heads=7"), UserError);         // 768 % 7 != 0
}

// wte 50,257*768 = 38,597,376; wpe 1,024*768 = 786,432; a block 12*768^2 + 13*768 =
// 7,087,872 (ln 4*768, attn 4*768^2 + 4*768, MLP 8*768^2 + 5*768), x 12 = 85,054,464;
// ln_f 1,536; lm_head tied (0). Sum: 124,439,808 (Hugging Face gpt2).
TEST(ZooTest, Gpt2) {
  const Graph g = build_zoo_model("gpt2");
  EXPECT_EQ(g.total_params(), 124'439'808);
  EXPECT_EQ(shape_of(g, "input_ids"), (Shape{1024}));
  EXPECT_EQ(g.info(*g.find("input_ids")).output_dtype, DType::Int64);
  EXPECT_EQ(shape_of(g, "transformer.wte"), (Shape{1024, 768}));
  EXPECT_EQ(shape_of(g, "transformer.h.0.mlp.c_fc"), (Shape{1024, 3072}));
  EXPECT_EQ(shape_of(g, "transformer.ln_f"), (Shape{1024, 768}));
  EXPECT_EQ(shape_of(g, "lm_head"), (Shape{1024, 50257}));
  EXPECT_EQ(shape_of(g, "loss"), Shape{});
  EXPECT_EQ(params_of(g, "transformer.wte"), 50257 * 768);
  EXPECT_EQ(params_of(g, "lm_head"), 0);  // counted at transformer.wte
  const auto attn = g.find("transformer.h.0.attn");
  ASSERT_TRUE(attn.has_value());
  EXPECT_TRUE(std::get<SelfAttentionAttrs>(g.layer(*attn).attrs).causal);
}

TEST(ZooTest, Gpt2Options) {
  // gpt2-medium: wte 50,257*1,024 = 51,463,168; wpe 1,024^2 = 1,048,576; a block
  // 12*1,024^2 + 13*1,024 = 12,596,224, x 24 = 302,309,376; ln_f 2,048.
  // Sum: 354,823,168 (Hugging Face gpt2-medium).
  EXPECT_EQ(build_zoo_model("gpt2:layers=24,width=1024,heads=16").total_params(), 354'823'168);
  // A shorter sequence leaves params alone (the position table keeps 1,024 rows).
  const Graph short_seq = build_zoo_model("gpt2:seq=128");
  EXPECT_EQ(short_seq.total_params(), 124'439'808);
  EXPECT_EQ(shape_of(short_seq, "lm_head"), (Shape{128, 50257}));
  EXPECT_THROW(build_zoo_model("gpt2:seq=2048"), UserError);  // > positions 1024
  EXPECT_THROW(build_zoo_model("gpt2:heads=5"), UserError);   // 768 % 5 != 0
}

// conv1 1*32*9 + 32 = 320; bn1 64; conv2 32*64*9 + 64 = 18,496; bn2 128;
// fc1 3,136*128 + 128 = 401,536; fc2 128*10 + 10 = 1,290. Sum: 421,834.
TEST(ZooTest, FmnistCnn) {
  const Graph g = build_zoo_model("fmnist_cnn");
  EXPECT_EQ(g.total_params(), 421'834);
  EXPECT_EQ(shape_of(g, "pool1"), (Shape{32, 14, 14}));
  EXPECT_EQ(shape_of(g, "pool2"), (Shape{64, 7, 7}));
  EXPECT_EQ(shape_of(g, "flatten"), (Shape{3136}));
  // channels=16: conv1 160, bn1 32, conv2 16*32*9 + 32 = 4,640, bn2 64,
  // fc1 1,568*128 + 128 = 200,832, fc2 128*3 + 3 = 387. Sum: 206,115.
  EXPECT_EQ(build_zoo_model("fmnist_cnn:channels=16,classes=3").total_params(), 206'115);
}

TEST(ZooTest, BadSpecsThrowUserError) {
  EXPECT_THROW(build_zoo_model("no_such_model"), UserError);
  EXPECT_FALSE(is_zoo_model("no_such_model"));
  EXPECT_THROW(build_zoo_model("resnet50:depth=50"), UserError);  // not an option of resnet50
  EXPECT_THROW(build_zoo_model("resnet50:classes=abc"), UserError);
  EXPECT_THROW(build_zoo_model("resnet50:classes=0"), UserError);
  EXPECT_THROW(build_zoo_model("resnet50:classes"), UserError);  // not key=value
  EXPECT_THROW(build_zoo_model("resnet50:classes=10,classes=5"), UserError);
  EXPECT_THROW(build_zoo_model("resnet:depth=42"), UserError);
  EXPECT_THROW(build_zoo_model("resnet:depth=18,width_per_group=128"), UserError);
  EXPECT_THROW(build_zoo_model("inception_v3:aux_logits=maybe"), UserError);
  try {
    build_zoo_model("resnet:depth=42");
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("42"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace burst::graph
