// The Dataset type, synthetic data and gathering a rank's sample range.
#include "burst/data/dataset.h"

#include <gtest/gtest.h>

#include "burst/util/error.h"

namespace burst::data {
namespace {

std::string spec_error(const SyntheticSpec& spec) {
  try {
    synthetic_dataset(spec);
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(SyntheticDataset, HasTheRequestedShapeAndRanges) {
  const Dataset dataset = synthetic_dataset({100, {3, 4, 5}, 7, 42});
  EXPECT_EQ(dataset.name(), "synthetic");
  EXPECT_EQ(dataset.num_samples(), 100);
  EXPECT_EQ(dataset.sample_shape(), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(dataset.sample_elements(), 60);
  EXPECT_EQ(dataset.num_classes(), 7);
  ASSERT_EQ(dataset.features().size(), 100u * 60u);
  for (const float value : dataset.features()) {
    ASSERT_GE(value, 0.0f);
    ASSERT_LT(value, 1.0f);
  }
  std::vector<int> per_class(7);
  for (const int64_t label : dataset.labels()) {
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 7);
    ++per_class[label];
  }
  for (const int count : per_class) EXPECT_GT(count, 0);  // ~14 each; P(a class is absent) < 1e-6
}

TEST(SyntheticDataset, IsDeterministicPerSeed) {
  const Dataset first = synthetic_dataset({50, {8}, 3, 1});
  const Dataset again = synthetic_dataset({50, {8}, 3, 1});
  const Dataset other = synthetic_dataset({50, {8}, 3, 2});
  EXPECT_EQ(first.features(), again.features());
  EXPECT_EQ(first.labels(), again.labels());
  EXPECT_NE(first.features(), other.features());
}

TEST(SyntheticDataset, SamplesDependOnlyOnSeedAndIndex) {
  // Counter-based: the first 5 of 20 samples equal a 5-sample dataset with the same seed.
  const Dataset big = synthetic_dataset({20, {2, 3}, 4, 9});
  const Dataset small = synthetic_dataset({5, {2, 3}, 4, 9});
  EXPECT_EQ(std::vector<float>(big.features().begin(), big.features().begin() + 5 * 6),
            small.features());
  EXPECT_EQ(std::vector<int64_t>(big.labels().begin(), big.labels().begin() + 5), small.labels());
}

TEST(SyntheticDataset, ClassesAreSeparable) {
  // Each sample is (prototype + noise) / 2, so the nearest class mean (estimated from the
  // data) recovers the label. With 256 elements, the squared distance to another class's
  // mean exceeds the distance to the own class's by sum((p_c - p_c')/2)^2 ~ 256 * (1/6) / 4
  // ~ 10.7 (prototype elements are uniform, variance 1/12), against a standard deviation
  // of ~0.9 from the noise: misclassifications are 11-sigma events.
  const int64_t elements = 256;
  const Dataset dataset = synthetic_dataset({400, {elements}, 4, 3});
  std::vector<double> mean(4 * elements, 0.0);
  std::vector<int> count(4, 0);
  for (int64_t i = 0; i < dataset.num_samples(); ++i) {
    const int64_t label = dataset.labels()[i];
    ++count[label];
    for (int64_t e = 0; e < elements; ++e)
      mean[label * elements + e] += dataset.sample_features(i)[e];
  }
  for (int c = 0; c < 4; ++c) {
    for (int64_t e = 0; e < elements; ++e) mean[c * elements + e] /= count[c];
  }
  int correct = 0;
  for (int64_t i = 0; i < dataset.num_samples(); ++i) {
    int best = 0;
    double best_distance = 1e300;
    for (int c = 0; c < 4; ++c) {
      double distance = 0;
      for (int64_t e = 0; e < elements; ++e) {
        const double diff = dataset.sample_features(i)[e] - mean[c * elements + e];
        distance += diff * diff;
      }
      if (distance < best_distance) {
        best_distance = distance;
        best = c;
      }
    }
    correct += best == dataset.labels()[i];
  }
  EXPECT_GE(correct, 396);
}

TEST(SyntheticDataset, RefusesBadSpecs) {
  EXPECT_NE(spec_error({0, {4}, 2, 0}).find("num_samples must be >= 1, got 0"), std::string::npos);
  EXPECT_NE(spec_error({4, {4}, 0, 0}).find("num_classes must be >= 1, got 0"), std::string::npos);
  EXPECT_NE(spec_error({4, {}, 2, 0}).find("at least one dimension"), std::string::npos);
  EXPECT_NE(spec_error({4, {4, 0}, 2, 0}).find("[4, 0] has an extent below 1"), std::string::npos);
  // 2^20 samples of 2^10 floats = 2^30 > 2^28; an overflowing product too.
  EXPECT_NE(spec_error({1 << 20, {1024}, 2, 0}).find("exceed the limit"), std::string::npos);
  EXPECT_NE(spec_error({2, {int64_t{1} << 40, int64_t{1} << 40}, 2, 0}).find("exceed the limit"),
            std::string::npos);
}

TEST(SyntheticTokens, ForASequenceClassifierLabelEachWalkByItsFirstIdModTheClasses) {
  SyntheticSpec spec{6, {5}, 1, 3};
  spec.vocab = 7;
  const Dataset next_tokens = synthetic_dataset(spec);
  spec.sequence_classes = 3;
  const Dataset classified = synthetic_dataset(spec);
  EXPECT_TRUE(classified.tokens());
  EXPECT_EQ(classified.labels_per_sample(), 1);
  EXPECT_EQ(classified.num_classes(), 3);
  for (int64_t sample = 0; sample < 6; ++sample) {
    // The same walks; one label each.
    EXPECT_EQ(classified.sample_features(sample)[0], next_tokens.sample_features(sample)[0]);
    EXPECT_EQ(classified.labels()[static_cast<size_t>(sample)], static_cast<int64_t>(classified.sample_features(sample)[0]) % 3);
  }
}

TEST(SyntheticTokens, AreWalksWithTheirNextTokensAsLabels) {
  SyntheticSpec spec{6, {5}, 1, 3};
  spec.vocab = 7;
  const Dataset tokens = synthetic_dataset(spec);
  EXPECT_TRUE(tokens.tokens());
  EXPECT_EQ(tokens.num_samples(), 6);
  EXPECT_EQ(tokens.labels_per_sample(), 5);
  EXPECT_EQ(tokens.num_classes(), 7);
  for (int64_t sample = 0; sample < 6; ++sample) {
    const float* ids = tokens.sample_features(sample);
    const int64_t* next = tokens.labels().data() + sample * 5;
    for (int t = 0; t < 5; ++t) {
      const auto id = static_cast<int64_t>(ids[t]);
      EXPECT_EQ(static_cast<float>(id), ids[t]);  // whole numbers
      const int64_t step = (next[t] - id + 7) % 7;  // each step is +1 or +2 mod vocab
      EXPECT_TRUE(step == 1 || step == 2) << "sample " << sample << " token " << t;
      if (t + 1 < 5) {
        EXPECT_EQ(next[t], static_cast<int64_t>(ids[t + 1]));  // the label is the next id
      }
    }
  }
  // Gathering two samples copies 5 labels each, in batch order.
  std::vector<int64_t> labels(10);
  gather_labels(tokens, {4, 1}, 0, 2, labels.data());
  EXPECT_EQ(std::vector<int64_t>(labels.begin(), labels.begin() + 5),
            std::vector<int64_t>(tokens.labels().begin() + 20, tokens.labels().begin() + 25));
  EXPECT_EQ(labels[5], tokens.labels()[5]);
  spec.vocab = -1;
  EXPECT_NE(spec_error(spec).find("vocab must lie in [1, 2^24], got -1"), std::string::npos);
}

// 4 samples of shape {2}: sample i holds {10 i, 10 i + 1} and label i.
Dataset counting_dataset() {
  return Dataset("counting", {2}, 4, {0, 1, 10, 11, 20, 21, 30, 31}, {0, 1, 2, 3});
}

TEST(Gather, CopiesTheRangeOfTheBatchInBatchOrder) {
  const Dataset dataset = counting_dataset();
  const std::vector<int64_t> batch = {3, 1, 0, 2};
  // A rank owning global samples [1, 3) of this batch gets dataset samples 1 and 0.
  std::vector<float> features(4, -1.0f);
  std::vector<int64_t> labels(2, -1);
  gather(dataset, batch, 1, 3, features.data(), labels.data());
  EXPECT_EQ(features, (std::vector<float>{10, 11, 0, 1}));
  EXPECT_EQ(labels, (std::vector<int64_t>{1, 0}));

  std::vector<float> all(8);
  gather_features(dataset, batch, 0, 4, all.data());
  EXPECT_EQ(all, (std::vector<float>{30, 31, 10, 11, 0, 1, 20, 21}));
  std::vector<int64_t> last(1);
  gather_labels(dataset, batch, 3, 4, last.data());
  EXPECT_EQ(last[0], 2);
  gather(dataset, batch, 2, 2, nullptr, nullptr);  // an empty range touches nothing
}

TEST(GatherDeathTest, AssertsOnRangesOutsideTheBatch) {
  const Dataset dataset = counting_dataset();
  std::vector<float> features(16);
  EXPECT_DEATH(gather_features(dataset, {0, 1}, 1, 3, features.data()), "inside the batch");
  EXPECT_DEATH(gather_features(dataset, {0, 4}, 0, 2, features.data()), "names a sample");
}

}  // namespace
}  // namespace burst::data
