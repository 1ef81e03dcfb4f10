#include "burst/data/dataset.h"

#include <algorithm>
#include <utility>

#include "burst/util/checked_math.h"
#include "burst/util/error.h"

namespace burst::data {
namespace {

int64_t elements_of(const std::vector<int64_t>& sample_shape) {
  BURST_ASSERT(!sample_shape.empty(), "a sample has at least one dimension");
  int64_t elements = 1;
  for (const int64_t extent : sample_shape) {
    BURST_ASSERT(extent >= 1, "sample dimensions are >= 1");
    const std::optional<int64_t> product = checked_mul(elements, extent);
    BURST_ASSERT(product.has_value(), "sample size overflows int64");
    elements = *product;
  }
  return elements;
}

}  // namespace

Dataset::Dataset(std::string name, std::vector<int64_t> sample_shape, int64_t num_classes,
                 std::vector<float> features, std::vector<int64_t> labels, int64_t labels_per_sample,
                 bool tokens)
    : name_(std::move(name)),
      sample_shape_(std::move(sample_shape)),
      num_classes_(num_classes),
      labels_per_sample_(labels_per_sample),
      tokens_(tokens),
      features_(std::move(features)),
      labels_(std::move(labels)) {
  BURST_ASSERT(labels_per_sample_ >= 1 && labels_.size() % static_cast<size_t>(labels_per_sample_) == 0,
               "labels hold labels_per_sample per sample");
  num_samples_ = static_cast<int64_t>(labels_.size()) / labels_per_sample_;
  sample_elements_ = elements_of(sample_shape_);
  const std::optional<int64_t> total = checked_mul(num_samples(), sample_elements_);
  BURST_ASSERT(total.has_value() && *total == static_cast<int64_t>(features_.size()),
               "features hold num_samples * sample_elements floats");
  BURST_ASSERT(num_classes_ >= 1, "a dataset has at least one class");
  for (const int64_t label : labels_) {
    BURST_ASSERT(label >= 0 && label < num_classes_, "labels lie in [0, num_classes)");
  }
}

Dataset::Dataset(const SampleLayout& layout, int64_t num_samples, std::shared_ptr<const SampleStore> store)
    : name_(layout.name),
      sample_shape_(layout.sample_shape),
      num_classes_(layout.num_classes),
      num_samples_(num_samples),
      labels_per_sample_(layout.labels_per_sample),
      tokens_(layout.tokens),
      store_(std::move(store)) {
  BURST_ASSERT(store_ != nullptr && num_samples_ >= 1 && labels_per_sample_ >= 1 && num_classes_ >= 1,
               "an on-demand dataset has a store, samples, labels and classes");
  sample_elements_ = elements_of(sample_shape_);
}

const std::vector<float>& Dataset::features() const {
  BURST_ASSERT(in_memory(), "features() of an in-memory dataset");
  return features_;
}

const std::vector<int64_t>& Dataset::labels() const {
  BURST_ASSERT(in_memory(), "labels() of an in-memory dataset");
  return labels_;
}

const float* Dataset::sample_features(int64_t index) const {
  BURST_ASSERT(in_memory() && index >= 0 && index < num_samples(), "sample index in range");
  return features_.data() + index * sample_elements_;
}

void Dataset::read_sample(int64_t index, float* features, int64_t* labels) const {
  BURST_ASSERT(index >= 0 && index < num_samples(), "sample index in range");
  if (store_) {
    store_->read(index, features, labels);
    return;
  }
  const float* first = features_.data() + index * sample_elements_;
  std::copy(first, first + sample_elements_, features);
  const auto label = labels_.begin() + index * labels_per_sample_;
  std::copy(label, label + labels_per_sample_, labels);
}

}  // namespace burst::data
