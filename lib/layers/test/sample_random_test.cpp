// Placement-invariant dropout (sample_random.h): a sample's mask depends on its global
// index, the seed, the step and the layer, never on how the batch is split into rows.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "burst/graph/builder.h"
#include "burst/layers/layer_module.h"
#include "burst/layers/sample_random.h"

namespace burst::layers {
namespace {

TEST(SampleDropout, RowsSplitAnywayGiveTheWholeBatchsMasks) {
  // A batch of 7 samples of [3, 5] as one block, and as rows [0, 2) + [2, 3) + [3, 7) on
  // three "ranks": each rank passes its rows' first global index.
  const torch::Tensor x = torch::ones({7, 3, 5});
  const RandomKey whole{11, 4, 0};
  const torch::Tensor one = sample_dropout(x, 0.3, whole, 2);
  std::vector<torch::Tensor> parts;
  for (const auto& [begin, end] : std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {2, 3}, {3, 7}}) {
    parts.push_back(sample_dropout(x.narrow(0, begin, end - begin), 0.3, RandomKey{11, 4, begin}, 2));
  }
  EXPECT_TRUE(torch::equal(torch::cat(parts, 0), one));
}

TEST(SampleDropout, KeepsOneMinusPScaledByItsInverse) {
  // 200 samples x 1000 elements at p = 0.25: values are exactly 0 or 4/3, and the kept
  // fraction is 0.75 within 5 standard deviations (sqrt(0.75 * 0.25 / 2e5) ~ 1e-3).
  const torch::Tensor mask = sample_dropout_mask(torch::ones({200, 1000}), 0.25, RandomKey{1, 0, 0}, 0);
  const torch::Tensor kept = mask.ne(0);
  EXPECT_TRUE(torch::equal(mask.masked_select(kept), torch::full({kept.sum().item<int64_t>()}, 4.0f / 3.0f)));
  EXPECT_NEAR(kept.to(torch::kDouble).mean().item<double>(), 0.75, 5e-3);
}

TEST(SampleDropout, SeedStepLayerAndSampleEachChangeTheMask) {
  const torch::Tensor x = torch::ones({1, 256});
  const torch::Tensor base = sample_dropout_mask(x, 0.5, RandomKey{1, 2, 3}, 4);
  EXPECT_TRUE(torch::equal(base, sample_dropout_mask(x, 0.5, RandomKey{1, 2, 3}, 4)));  // deterministic
  EXPECT_FALSE(torch::equal(base, sample_dropout_mask(x, 0.5, RandomKey{9, 2, 3}, 4)));
  EXPECT_FALSE(torch::equal(base, sample_dropout_mask(x, 0.5, RandomKey{1, 9, 3}, 4)));
  EXPECT_FALSE(torch::equal(base, sample_dropout_mask(x, 0.5, RandomKey{1, 2, 9}, 4)));
  EXPECT_FALSE(torch::equal(base, sample_dropout_mask(x, 0.5, RandomKey{1, 2, 3}, 9)));
}

TEST(SampleDropout, GradientIsTheMaskAndDoublesWork) {
  const torch::Tensor x = torch::randn({4, 6}, torch::kFloat64).requires_grad_(true);
  const RandomKey key{3, 1, 10};
  sample_dropout(x, 0.5, key, 7).sum().backward();
  const torch::Tensor mask = sample_dropout_mask(x, 0.5, key, 7);
  EXPECT_EQ(mask.scalar_type(), torch::kFloat64);
  EXPECT_TRUE(torch::equal(x.grad(), mask));
  // The same draws in float32 and float64: the mask does not depend on the dtype.
  EXPECT_TRUE(torch::equal(sample_dropout_mask(x.detach().to(torch::kFloat32), 0.5, key, 7).to(torch::kFloat64), mask));
}

TEST(SampleDropout, TheDropoutLayerDrawsByItsKeyAndLayerId) {
  graph::GraphBuilder b("drop");
  auto x = b.input("input", {100});
  b.dropout("drop", x, 0.5);
  const graph::Graph graph = std::move(b).build();
  auto dropout = make_layer_module(graph, 1);
  const torch::Tensor ones = torch::ones({3, 100});
  const RandomKey key{5, 6, 7};
  EXPECT_TRUE(torch::equal(dropout->forward({ones}, key), sample_dropout_mask(ones, 0.5, key, 1)));
  EXPECT_FALSE(torch::equal(dropout->forward({ones}, RandomKey{5, 7, 7}), dropout->forward({ones}, key)));
}

}  // namespace
}  // namespace burst::layers
