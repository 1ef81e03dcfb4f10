// The real Fashion-MNIST files from Debian's dataset-fashion-mnist, when installed.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>

#include "burst/data/idx.h"
#include "burst/util/error.h"

namespace burst::data {
namespace {

bool fashion_mnist_installed() {
  struct stat info {};
  return stat((std::string(kFashionMnistDirectory) + "/t10k-labels-idx1-ubyte.gz").c_str(),
              &info) == 0;
}

// Fashion-MNIST is balanced: 6000 training and 1000 test images per class (Xiao, Rasul,
// Vollgraf 2017, table 1).
void expect_fashion_mnist(const Dataset& dataset, int64_t samples) {
  EXPECT_EQ(dataset.num_samples(), samples);
  EXPECT_EQ(dataset.sample_shape(), (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(dataset.num_classes(), 10);
  std::vector<int64_t> per_class(10);
  for (const int64_t label : dataset.labels()) {
    ASSERT_GE(label, 0);
    ASSERT_LE(label, 9);
    ++per_class[label];
  }
  EXPECT_EQ(per_class, std::vector<int64_t>(10, samples / 10));
  const auto [low, high] =
      std::minmax_element(dataset.features().begin(), dataset.features().end());
  EXPECT_EQ(*low, 0.0f);  // pixel bytes span 0..255
  EXPECT_EQ(*high, 1.0f);
}

TEST(FashionMnist, LoadsTheTrainSplit) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const Dataset train = load_fashion_mnist(kFashionMnistDirectory, Split::train);
  EXPECT_EQ(train.name(), "fashion-mnist-train");
  expect_fashion_mnist(train, 60000);
}

TEST(FashionMnist, LoadsTheTestSplit) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const Dataset test = load_fashion_mnist(kFashionMnistDirectory, Split::test);
  EXPECT_EQ(test.name(), "fashion-mnist-test");
  expect_fashion_mnist(test, 10000);
}

TEST(FashionMnist, AMissingDirectorySaysHowToGetTheFiles) {
  try {
    load_fashion_mnist("/nonexistent/fashion-mnist", Split::test);
    FAIL() << "no error";
  } catch (const UserError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("'/nonexistent/fashion-mnist/t10k-images-idx3-ubyte.gz' is missing"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("dataset-fashion-mnist"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace burst::data
