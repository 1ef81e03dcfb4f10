// Graph validation: names, inputs, cycles, ordering, consumers, ties.
#include <gtest/gtest.h>

#include "burst/graph/graph.h"
#include "burst/util/error.h"
#include "test_models.h"

namespace burst::graph {
namespace {

LayerSpec layer(std::string name, std::vector<std::string> inputs, Attrs attrs) {
  return LayerSpec{std::move(name), std::move(inputs), std::move(attrs)};
}
LayerSpec image(std::string name) { return layer(std::move(name), {}, InputAttrs{{1, 4, 4}}); }
LayerSpec relu(std::string name, std::string in) {
  return layer(std::move(name), {std::move(in)}, ReluAttrs{});
}

std::string build_error(std::vector<LayerSpec> layers) {
  try {
    Graph::build("m", std::move(layers));
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(Graph, KeepsFileOrderWhenTopologicalAndSortsOtherwise) {
  // Written consumer-first: c <- b <- a <- input. The graph orders input, a, b, c.
  const Graph graph = Graph::build("m", {relu("c", "b"), relu("b", "a"), relu("a", "input"),
                                         image("input")});
  ASSERT_EQ(graph.size(), 4u);
  EXPECT_EQ(graph.layer(0).name, "input");
  EXPECT_EQ(graph.layer(1).name, "a");
  EXPECT_EQ(graph.layer(3).name, "c");
  EXPECT_EQ(graph.inputs(3), (std::vector<LayerId>{2}));
  EXPECT_EQ(graph.consumers(0), (std::vector<LayerId>{1}));
}

TEST(Graph, ConsumersOfABranch) {
  // input feeds a and b, which join in sum: consumers(input) = {a, b}.
  const Graph graph = Graph::build(
      "m", {image("input"), relu("a", "input"), relu("b", "input"),
            layer("sum", {"a", "b"}, AddAttrs{})});
  EXPECT_EQ(graph.consumers(0), (std::vector<LayerId>{1, 2}));
  EXPECT_EQ(graph.inputs(3), (std::vector<LayerId>{1, 2}));
  EXPECT_EQ(graph.find("b"), LayerId{2});
  EXPECT_FALSE(graph.find("nope").has_value());
}

TEST(Graph, RejectsStructuralErrorsNamingTheLayer) {
  EXPECT_EQ(build_error({}), "model 'm' has no layers");
  EXPECT_EQ(build_error({image("x"), relu("x", "x")}),
            "layer #1: name 'x' is used by another layer");
  EXPECT_EQ(build_error({image("input"), relu("a", "ghost")}),
            "layer 'a' (relu): unknown input 'ghost'");
  EXPECT_EQ(build_error({image("input"), relu("a", "a")}),
            "layer 'a' (relu): consumes its own output (cycle)");
  EXPECT_EQ(build_error({image("input"), relu("a", "c"), relu("b", "a"), relu("c", "b")}),
            "model 'm' has a cycle: 'a' -> 'b' -> 'c' -> 'a'");
  EXPECT_EQ(build_error({image("input"), layer("sum", {"input"}, AddAttrs{})}),
            "layer 'sum' (add): needs at least 2 inputs, got 1");
  EXPECT_EQ(build_error({image("input"), layer("r", {}, ReluAttrs{})}),
            "layer 'r' (relu): needs exactly 1 input, got 0");
  EXPECT_EQ(build_error({relu("a", "b"), relu("b", "a")}), "model 'm' has no input layer");
  EXPECT_EQ(build_error({layer("", {}, InputAttrs{{3}})}), "layer #0 (input): name is empty");
}

TEST(Graph, RejectsMismatchedJoins) {
  const std::string error = build_error(
      {image("input"), layer("pool", {"input"}, AdaptiveAvgPool2dAttrs{{2, 2}}),
       layer("sum", {"input", "pool"}, AddAttrs{})});
  EXPECT_EQ(error, "layer 'sum' (add): input 'pool' has shape [1, 2, 2] but input 'input' has [1, 4, 4]");
}

TEST(Graph, RejectsBadTies) {
  InputAttrs ids{{5}, DType::Int64, 100};
  const std::string error =
      build_error({layer("ids", {}, ids), layer("wte", {"ids"}, EmbeddingAttrs{100, 8}),
                   layer("head", {"wte"}, LinearAttrs{99, false, "wte"})});
  EXPECT_EQ(error, "layer 'head' (linear): weight [99, 8] cannot be tied to embedding 'wte' of [100, 8]");
  EXPECT_EQ(build_error({image("input"), layer("fc", {"input"}, LinearAttrs{4, false, "input"})}),
            "layer 'fc' (linear): tied_to 'input' is not an embedding layer");
}

TEST(Graph, TotalsSumTheLayers) {
  const Graph graph = testing::tiny_cnn();
  int64_t params = 0, flops = 0, bytes = 0;
  for (LayerId id = 0; id < static_cast<LayerId>(graph.size()); ++id) {
    params += graph.info(id).params;
    flops += graph.info(id).forward_flops;
    bytes += graph.info(id).output_bytes;
  }
  EXPECT_EQ(graph.total_params(), params);
  EXPECT_EQ(graph.total_forward_flops(), flops);
  EXPECT_EQ(graph.total_output_bytes(), bytes);
}

}  // namespace
}  // namespace burst::graph
