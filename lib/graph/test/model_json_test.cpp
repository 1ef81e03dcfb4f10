// JSON model files: round trips, hand-written files, and one-line errors.
#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "burst/graph/model_json.h"
#include "burst/graph/zoo.h"
#include "burst/util/error.h"
#include "test_models.h"

namespace burst::graph {
namespace {

using nlohmann::json;

void expect_same_graph(const Graph& a, const Graph& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.name(), b.name());
  for (LayerId id = 0; id < static_cast<LayerId>(a.size()); ++id) {
    EXPECT_EQ(a.layer(id).name, b.layer(id).name);
    EXPECT_EQ(a.layer(id).op(), b.layer(id).op());
    EXPECT_EQ(a.inputs(id), b.inputs(id));
    EXPECT_EQ(a.info(id).output_shape, b.info(id).output_shape);
    EXPECT_EQ(a.info(id).params, b.info(id).params);
    EXPECT_EQ(a.info(id).forward_flops, b.info(id).forward_flops);
  }
  EXPECT_EQ(model_to_json(a), model_to_json(b));  // every attribute, canonical form
}

TEST(ModelJson, EveryZooModelRoundTrips) {
  for (const auto& entry : zoo_entries()) {
    SCOPED_TRACE(entry.name);
    const Graph original = build_zoo_model(entry.name);
    const std::string text = model_to_json(original).dump(2);
    expect_same_graph(original, model_from_text(text));
  }
}

TEST(ModelJson, FileRoundTrip) {
  const Graph original = testing::tiny_cnn();
  const std::string path = ::testing::TempDir() + "/burst_model_json_test.json";
  save_model_file(original, path);
  expect_same_graph(original, load_model_file(path));
  std::remove(path.c_str());
}

TEST(ModelJson, HandWrittenFileWithDefaultsAndScalarPairs) {
  // Defaults follow PyTorch: stride 1, padding 0, bias true; "kernel": 3 means [3, 3].
  const Graph graph = model_from_text(R"({
    "format": "burst.model", "version": 1, "name": "handmade",
    "layers": [
      {"name": "image", "op": "input", "shape": [1, 28, 28]},
      {"name": "conv", "op": "conv2d", "inputs": ["image"], "out_channels": 8, "kernel": 3,
       "padding": 1},
      {"name": "pool", "op": "maxpool2d", "inputs": ["conv"], "kernel": 2},
      {"name": "flat", "op": "flatten", "inputs": ["pool"]},
      {"name": "fc", "op": "linear", "inputs": ["flat"], "out_features": 10},
      {"name": "loss", "op": "softmax_cross_entropy", "inputs": ["fc"]}
    ]})");
  EXPECT_EQ(graph.name(), "handmade");
  EXPECT_EQ(graph.info(*graph.find("pool")).output_shape, (Shape{8, 14, 14}));
  // conv 8*9 + 8 = 80; fc 1568*10 + 10 = 15,690.
  EXPECT_EQ(graph.total_params(), 80 + 15690);
  const json exported = model_to_json(graph);
  EXPECT_EQ(exported["layers"][1]["stride"], json::array({1, 1}));
  EXPECT_FALSE(exported["layers"][2].contains("stride"));  // unset pool stride stays unset
}

std::string load_error(const std::string& text) {
  try {
    model_from_text(text);
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(ModelJson, ErrorsNameTheLayerAndField) {
  const std::string head = R"({"format": "burst.model", "version": 1, "name": "m", "layers": [)"
                           R"({"name": "image", "op": "input", "shape": [1, 8, 8]})";
  EXPECT_EQ(load_error(head + R"(, {"name": "c", "op": "conv2d", "inputs": ["image"], "kernel": 3}]})"),
            "layer #1 'c' (conv2d): field 'out_channels' is missing");
  EXPECT_EQ(load_error(head + R"(, {"name": "c", "op": "conv2d", "inputs": ["image"],)"
                              R"( "out_channels": 2.5, "kernel": 3}]})"),
            "layer #1 'c' (conv2d): field 'out_channels' must be an integer, got 2.5");
  EXPECT_EQ(load_error(head + R"(, {"name": "r", "op": "relu", "inputs": ["image"], "slope": 1}]})"),
            "layer #1 'r' (relu): unknown field 'slope' (accepted: inputs, name, op)");
  EXPECT_EQ(load_error(head + R"(, {"name": "c", "op": "conv2d", "inputs": ["image"],)"
                              R"( "out_channels": 18446744073709551615, "kernel": 3}]})"),
            "layer #1 'c' (conv2d): field 'out_channels' is too large: 18446744073709551615");
  EXPECT_EQ(load_error(R"({"format": "burst.model", "version": 2, "name": "m", "layers": []})"),
            "model file: format version 2 is not supported (this burst reads version 1)");
  EXPECT_EQ(load_error(R"({"format": "burst.plan", "version": 1, "name": "m", "layers": []})"),
            "model file: format is \"burst.plan\", expected \"burst.model\"");
  EXPECT_EQ(load_error(R"([1, 2])"), "model file: must be a JSON object, got [1,2]");
  EXPECT_EQ(load_error(std::string(100, '[') + std::string(100, ']')),
            "JSON nesting deeper than 64 levels");
  EXPECT_EQ(load_error(R"({"format": )").rfind("invalid JSON: parse error at line 1", 0), 0u);
}

TEST(ModelJson, LoadModelAcceptsZooSpecsAndFiles) {
  EXPECT_EQ(load_model("fmnist_cnn").name(), "fmnist_cnn");
  try {
    load_model("no_such_model");
    FAIL();
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("unknown model 'no_such_model'"), std::string::npos);
  }
  try {
    load_model("missing/file.json");
    FAIL();
  } catch (const UserError& error) {
    EXPECT_EQ(std::string(error.what()),
              "cannot open model file 'missing/file.json': No such file or directory");
  }
}

}  // namespace
}  // namespace burst::graph

namespace burst::graph {
namespace {

TEST(LayerSignature, SameWorkSameSignature) {
  const Graph resnet = build_zoo_model("resnet50");
  const auto sig = [&](const char* name) { return layer_signature(resnet, *resnet.find(name)); };
  // layer1.1.conv2 and layer1.2.conv2 are both 3x3 64->64 convs on [64, 56, 56].
  EXPECT_EQ(sig("layer1.1.conv2"), sig("layer1.2.conv2"));
  EXPECT_NE(sig("layer1.0.conv2"), sig("layer2.0.conv2"));
  EXPECT_EQ(sig("layer1.1.conv2"),
            R"(conv2d{"bias":false,"dilation":[1,1],"groups":1,"kernel":[3,3],"out_channels":64,)"
            R"("padding":[1,1],"stride":[1,1]}[64,56,56])");
  EXPECT_EQ(sig("fc"), R"(linear{"bias":true,"out_features":1000}[2048])");
  // A tied head and its untied twin do the same work.
  const Graph gpt = build_zoo_model("gpt2:layers=1");
  EXPECT_EQ(layer_signature(gpt, *gpt.find("lm_head")),
            R"(linear{"bias":false,"out_features":50257}[1024,768])");
}

}  // namespace
}  // namespace burst::graph
