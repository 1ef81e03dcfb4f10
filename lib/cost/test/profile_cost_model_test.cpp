#include "burst/cost/profile_cost_model.h"

#include <cmath>

#include <gtest/gtest.h>

#include "burst/graph/model_json.h"
#include "burst/graph/zoo.h"
#include "burst/util/error.h"

namespace burst::cost {
namespace {

using Points = std::vector<std::pair<int64_t, Seconds>>;

TEST(InterpolateLogLog, HandDerivedPoints) {
  // (1, 1 ms), (4, 4 ms): slope 1 in log-log, so batch 2 -> 2 ms.
  const Points linear = {{1, Seconds::from_ms(1)}, {4, Seconds::from_ms(4)}};
  EXPECT_NEAR(interpolate_log_log(linear, 2)->ms(), 2.0, 1e-12);
  // (1, 1 ms), (16, 4 ms): time = batch^0.5, so batch 4 -> 2 ms, batch 2 -> sqrt(2) ms.
  const Points sqrt_curve = {{1, Seconds::from_ms(1)}, {16, Seconds::from_ms(4)}};
  EXPECT_NEAR(interpolate_log_log(sqrt_curve, 4)->ms(), 2.0, 1e-12);
  EXPECT_NEAR(interpolate_log_log(sqrt_curve, 2)->ms(), std::sqrt(2.0), 1e-12);
  // Measured points are returned exactly; above the last, time grows with the batch:
  // 32 = 2 x 16 -> 8 ms. Below the first there is no estimate.
  EXPECT_EQ(interpolate_log_log(sqrt_curve, 16)->ms(), 4.0);
  EXPECT_NEAR(interpolate_log_log(sqrt_curve, 32)->ms(), 8.0, 1e-12);
  const Points from_two = {{2, Seconds::from_ms(1)}};
  EXPECT_FALSE(interpolate_log_log(from_two, 1).has_value());
  EXPECT_FALSE(interpolate_log_log({}, 1).has_value());
}

Profile relu_profile(const std::string& signature) {
  Profile profile;
  profile.device = "cpu";
  // Batch 4 measured faster than batch 2 (noise): the running maximum keeps it at 3 ms.
  for (const auto& [batch, ms] : std::vector<std::pair<int64_t, double>>{{1, 1}, {2, 3}, {4, 2.5}, {8, 6}}) {
    ProfileEntry entry;
    entry.signature = signature;
    entry.op = "relu";
    entry.batch = batch;
    entry.forward = Seconds::from_ms(ms);
    entry.backward = Seconds::from_ms(2 * ms);
    profile.entries.push_back(entry);
  }
  return profile;
}

TEST(ProfileCostModel, LooksUpBySignatureMonotoneInBatch) {
  const graph::Graph graph = graph::build_zoo_model("fmnist_cnn");
  const graph::LayerId relu = *graph.find("relu1");
  const ProfileCostModel model(relu_profile(graph::layer_signature(graph, relu)));
  const auto measured = model.estimate(graph, relu, 2);
  ASSERT_TRUE(measured.has_value());
  EXPECT_EQ(measured->source, CostSource::Measured);
  EXPECT_DOUBLE_EQ(measured->time.forward.ms(), 3.0);
  EXPECT_DOUBLE_EQ(measured->time.backward.ms(), 6.0);
  // Batch 4 reads the monotone curve: max(3, 2.5) = 3 ms.
  EXPECT_DOUBLE_EQ(model.estimate(graph, relu, 4)->time.forward.ms(), 3.0);
  // Batch 6 between (4, 3 ms) and (8, 6 ms): log-log weight log(6/4)/log(2) = 0.585;
  // 3 x 2^0.585 = 3 x 1.5 = 4.5 ms (slope 1 segment).
  const auto between = model.estimate(graph, relu, 6);
  EXPECT_EQ(between->source, CostSource::Interpolated);
  EXPECT_NEAR(between->time.forward.ms(), 4.5, 1e-9);
  for (int64_t b = 1; b < 40; ++b) {
    EXPECT_LE(model.estimate(graph, relu, b)->time.forward, model.estimate(graph, relu, b + 1)->time.forward);
  }
  // No entry holds an update: none known. One measured at any batch holds for the layer.
  EXPECT_FALSE(model.update(graph, relu).has_value());
  Profile with_update = relu_profile(graph::layer_signature(graph, relu));
  with_update.entries.back().update = Seconds::from_ms(0.75);
  with_update.index();
  EXPECT_DOUBLE_EQ(ProfileCostModel(with_update).update(graph, relu)->ms(), 0.75);
  // Split times (BatchNorm's synchronised path) only where measured; interpolated like the rest.
  EXPECT_FALSE(model.estimate_split(graph, relu, 2).has_value());
  Profile with_split = relu_profile(graph::layer_signature(graph, relu));
  for (ProfileEntry& entry : with_split.entries) {
    entry.split_forward = entry.forward * 2;
    entry.split_backward = entry.backward * 2;
  }
  with_split.index();
  const auto split = ProfileCostModel(with_split).estimate_split(graph, relu, 2);
  ASSERT_TRUE(split.has_value());
  EXPECT_DOUBLE_EQ(split->time.forward.ms(), 6.0);
  EXPECT_DOUBLE_EQ(split->time.backward.ms(), 12.0);
  // Another layer has no data, and require() names it.
  EXPECT_FALSE(model.estimate(graph, *graph.find("conv1"), 1).has_value());
  try {
    model.require(graph, *graph.find("conv1"), 1);
    FAIL();
  } catch (const UserError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("no cpu cost data for layer 'conv1' (conv2d) of model 'fmnist_cnn' at batch 1", 0), 0u)
        << error.what();
  }
}

}  // namespace
}  // namespace burst::cost
