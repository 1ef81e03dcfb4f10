#pragma once
// A small fluent helper for writing models in C++ (the zoo uses it). Each method appends
// one layer and returns its name, to be passed as the input of later layers:
//
//   GraphBuilder b("tiny");
//   auto x = b.input("input", {1, 28, 28});
//   x = b.conv2d("conv1", x, conv2d_attrs(8, {3, 3}));
//   x = b.relu("relu1", x);
//   Graph g = b.build();
//
// Nothing is validated until build(), which calls Graph::build.
#include <string>
#include <vector>

#include "burst/graph/graph.h"

namespace burst::graph {

// Attribute shorthands for the common cases; anything not named keeps PyTorch's default.
Conv2dAttrs conv2d_attrs(int64_t out_channels, Pair kernel, Pair stride = {1, 1},
                         Pair padding = {0, 0}, bool bias = true);
MaxPool2dAttrs maxpool2d_attrs(Pair kernel, Pair stride, Pair padding = {0, 0});

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string model_name) : model_name_(std::move(model_name)) {}

  // Appends a layer of any op; the typed helpers below call this.
  std::string add(std::string name, std::vector<std::string> inputs, Attrs attrs);

  std::string input(std::string name, Shape shape);                       // float32 image/features
  std::string token_input(std::string name, int64_t tokens, int64_t vocab);  // int64 ids [tokens]
  std::string conv2d(std::string name, const std::string& in, const Conv2dAttrs& attrs);
  std::string batchnorm2d(std::string name, const std::string& in, double eps = 1e-5);
  std::string relu(std::string name, const std::string& in);
  std::string gelu(std::string name, const std::string& in, std::string approximate = "none");
  std::string maxpool2d(std::string name, const std::string& in, const MaxPool2dAttrs& attrs);
  std::string avgpool2d(std::string name, const std::string& in, const AvgPool2dAttrs& attrs);
  std::string adaptive_avgpool2d(std::string name, const std::string& in, Pair output);
  std::string linear(std::string name, const std::string& in, int64_t out_features,
                     bool bias = true, std::string tied_to = "");
  std::string flatten(std::string name, const std::string& in);
  std::string dropout(std::string name, const std::string& in, double p);
  std::string add_(std::string name, std::vector<std::string> ins);  // element-wise sum
  std::string concat(std::string name, std::vector<std::string> ins, int64_t axis = 0);
  std::string layernorm(std::string name, const std::string& in, double eps = 1e-5);
  std::string embedding(std::string name, const std::string& in, int64_t num_embeddings,
                        int64_t dim);
  std::string position_embedding(std::string name, const std::string& in, int64_t max_positions);
  std::string class_token(std::string name, const std::string& in);
  std::string image_to_tokens(std::string name, const std::string& in);
  std::string take_token(std::string name, const std::string& in, int64_t index = 0);
  std::string self_attention(std::string name, const std::string& in, int64_t heads,
                             bool causal = false, double dropout = 0.0);
  std::string cross_entropy(std::string name, const std::string& logits, double weight = 1.0);

  // Validates and returns the graph (throws UserError like Graph::build).
  Graph build() &&;

 private:
  std::string model_name_;
  std::vector<LayerSpec> layers_;
};

}  // namespace burst::graph
