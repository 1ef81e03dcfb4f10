#include "burst/graph/builder.h"

namespace burst::graph {

Conv2dAttrs conv2d_attrs(int64_t out_channels, Pair kernel, Pair stride, Pair padding, bool bias) {
  Conv2dAttrs attrs;
  attrs.out_channels = out_channels;
  attrs.kernel = kernel;
  attrs.stride = stride;
  attrs.padding = padding;
  attrs.bias = bias;
  return attrs;
}

MaxPool2dAttrs maxpool2d_attrs(Pair kernel, Pair stride, Pair padding) {
  MaxPool2dAttrs attrs;
  attrs.kernel = kernel;
  attrs.stride = stride;
  attrs.padding = padding;
  return attrs;
}

std::string GraphBuilder::add(std::string name, std::vector<std::string> inputs,
                              Attrs attrs) {
  layers_.push_back(LayerSpec{std::move(name), std::move(inputs), std::move(attrs)});
  return layers_.back().name;
}

std::string GraphBuilder::input(std::string name, Shape shape) {
  InputAttrs attrs;
  attrs.shape = std::move(shape);
  return add(std::move(name), {}, attrs);
}

std::string GraphBuilder::token_input(std::string name, int64_t tokens, int64_t vocab) {
  InputAttrs attrs;
  attrs.shape = {tokens};
  attrs.dtype = DType::Int64;
  attrs.vocab = vocab;
  return add(std::move(name), {}, attrs);
}

std::string GraphBuilder::conv2d(std::string name, const std::string& in, const Conv2dAttrs& attrs) {
  return add(std::move(name), {in}, attrs);
}

std::string GraphBuilder::batchnorm2d(std::string name, const std::string& in, double eps) {
  BatchNorm2dAttrs attrs;
  attrs.eps = eps;
  return add(std::move(name), {in}, attrs);
}

std::string GraphBuilder::relu(std::string name, const std::string& in) {
  return add(std::move(name), {in}, ReluAttrs{});
}

std::string GraphBuilder::gelu(std::string name, const std::string& in, std::string approximate) {
  return add(std::move(name), {in}, GeluAttrs{std::move(approximate)});
}

std::string GraphBuilder::maxpool2d(std::string name, const std::string& in,
                                    const MaxPool2dAttrs& attrs) {
  return add(std::move(name), {in}, attrs);
}

std::string GraphBuilder::avgpool2d(std::string name, const std::string& in,
                                    const AvgPool2dAttrs& attrs) {
  return add(std::move(name), {in}, attrs);
}

std::string GraphBuilder::adaptive_avgpool2d(std::string name, const std::string& in, Pair output) {
  return add(std::move(name), {in}, AdaptiveAvgPool2dAttrs{output});
}

std::string GraphBuilder::linear(std::string name, const std::string& in, int64_t out_features,
                                 bool bias, std::string tied_to) {
  return add(std::move(name), {in}, LinearAttrs{out_features, bias, std::move(tied_to)});
}

std::string GraphBuilder::flatten(std::string name, const std::string& in) {
  return add(std::move(name), {in}, FlattenAttrs{});
}

std::string GraphBuilder::dropout(std::string name, const std::string& in, double p) {
  return add(std::move(name), {in}, DropoutAttrs{p});
}

std::string GraphBuilder::add_(std::string name, std::vector<std::string> ins) {
  return add(std::move(name), std::move(ins), AddAttrs{});
}

std::string GraphBuilder::concat(std::string name, std::vector<std::string> ins, int64_t axis) {
  return add(std::move(name), std::move(ins), ConcatAttrs{axis});
}

std::string GraphBuilder::layernorm(std::string name, const std::string& in, double eps) {
  return add(std::move(name), {in}, LayerNormAttrs{eps});
}

std::string GraphBuilder::embedding(std::string name, const std::string& in,
                                    int64_t num_embeddings, int64_t dim) {
  return add(std::move(name), {in}, EmbeddingAttrs{num_embeddings, dim});
}

std::string GraphBuilder::position_embedding(std::string name, const std::string& in,
                                             int64_t max_positions) {
  return add(std::move(name), {in}, PositionEmbeddingAttrs{max_positions});
}

std::string GraphBuilder::class_token(std::string name, const std::string& in) {
  return add(std::move(name), {in}, ClassTokenAttrs{});
}

std::string GraphBuilder::image_to_tokens(std::string name, const std::string& in) {
  return add(std::move(name), {in}, ImageToTokensAttrs{});
}

std::string GraphBuilder::take_token(std::string name, const std::string& in, int64_t index) {
  return add(std::move(name), {in}, TakeTokenAttrs{index});
}

std::string GraphBuilder::self_attention(std::string name, const std::string& in, int64_t heads,
                                         bool causal, double dropout) {
  return add(std::move(name), {in}, SelfAttentionAttrs{heads, causal, dropout});
}

std::string GraphBuilder::cross_entropy(std::string name, const std::string& logits,
                                        double weight) {
  return add(std::move(name), {logits}, SoftmaxCrossEntropyAttrs{weight});
}

Graph GraphBuilder::build() && { return Graph::build(std::move(model_name_), std::move(layers_)); }

}  // namespace burst::graph
