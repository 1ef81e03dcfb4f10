// check_fits_samples: a model fits a dataset when its input takes the samples and its
// losses the classes; otherwise one error naming the layer and both shapes.
#include <gtest/gtest.h>

#include "burst/graph/builder.h"
#include "burst/graph/data_fit.h"
#include "burst/util/error.h"

namespace burst::graph {
namespace {

Graph classifier(Shape input, int64_t classes) {
  GraphBuilder b("tiny");
  auto x = b.input("images", std::move(input));
  x = b.flatten("flat", x);
  x = b.linear("fc", x, classes);
  b.cross_entropy("loss", x);
  return std::move(b).build();
}

std::string refusal(const Graph& graph, const SampleSpec& spec) {
  try {
    check_fits_samples(graph, spec);
  } catch (const UserError& error) {
    return error.what();
  }
  return "";
}

TEST(DataFit, AModelThatTakesTheSamplesAndClassesFits) {
  EXPECT_EQ(refusal(classifier({1, 28, 28}, 10), {"fashion-mnist", {1, 28, 28}, 10}), "");
}

TEST(DataFit, AnotherSampleShapeIsRefusedNamingTheInput) {
  EXPECT_EQ(refusal(classifier({3, 32, 32}, 10), {"fashion-mnist", {1, 28, 28}, 10}),
            "model 'tiny' input 'images' takes samples [3, 32, 32], but dataset 'fashion-mnist' has [1, 28, 28]");
}

TEST(DataFit, AnotherClassCountIsRefusedNamingTheLoss) {
  EXPECT_EQ(refusal(classifier({1, 28, 28}, 100), {"fashion-mnist", {1, 28, 28}, 10}),
            "model 'tiny' loss 'loss' takes logits [100], but dataset 'fashion-mnist' has 10 classes");
}

TEST(DataFit, TokenModelsTakeTokenDataWithALabelPerToken) {
  const Graph gpt2 = [] {
    GraphBuilder b("lm");
    auto x = b.token_input("ids", 8, 50);
    x = b.embedding("wte", x, 50, 16);
    x = b.linear("head", x, 50);
    b.cross_entropy("loss", x);
    return std::move(b).build();
  }();
  EXPECT_EQ(refusal(gpt2, {"synthetic", {8}, 50, true}), "");
  EXPECT_EQ(refusal(gpt2, {"synthetic", {8}, 50, false}),
            "model 'lm' input 'ids' takes token ids, but dataset 'synthetic' has float samples");
  EXPECT_EQ(refusal(classifier({8}, 50), {"synthetic", {8}, 50, true}),
            "model 'tiny' input 'images' takes floats, but dataset 'synthetic' has token ids");
  EXPECT_EQ(refusal(gpt2, {"synthetic", {8}, 40, true}),
            "model 'lm' loss 'loss' takes logits [8, 50], but dataset 'synthetic' has 40 classes for each of 8 tokens");
}

TEST(DataFit, SequenceClassifiersTakeTokenDataWithALabelPerSequence) {
  // Token ids in, logits [3] out (BERT's sequence classification): one label a sample.
  const Graph classifier = [] {
    GraphBuilder b("bert");
    auto x = b.token_input("ids", 8, 50);
    x = b.embedding("embed", x, 50, 16);
    x = b.add("first", {x}, TakeTokenAttrs{0});
    x = b.linear("head", x, 3);
    b.cross_entropy("loss", x);
    return std::move(b).build();
  }();
  EXPECT_EQ(refusal(classifier, {"synthetic", {8}, 3, true, false}), "");
  EXPECT_EQ(refusal(classifier, {"synthetic", {8}, 3, true, true}),
            "model 'bert' loss 'loss' takes logits [3], but dataset 'synthetic' has 3 classes for each of 8 tokens");
  EXPECT_EQ(refusal(classifier, {"synthetic", {8}, 5, true, false}),
            "model 'bert' loss 'loss' takes logits [3], but dataset 'synthetic' has 5 classes for each sequence");
  EXPECT_FALSE(model_samples(classifier).labels_per_token);
}

}  // namespace
}  // namespace burst::graph
