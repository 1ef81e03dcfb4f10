#include "burst/data/dataset.h"

#include <utility>

#include "burst/util/checked_math.h"
#include "burst/util/error.h"

namespace burst::data {

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
  BURST_ASSERT(!sample_shape_.empty(), "a sample has at least one dimension");
  int64_t elements = 1;
  for (const int64_t extent : sample_shape_) {
    BURST_ASSERT(extent >= 1, "sample dimensions are >= 1");
    const std::optional<int64_t> product = checked_mul(elements, extent);
    BURST_ASSERT(product.has_value(), "sample size overflows int64");
    elements = *product;
  }
  sample_elements_ = elements;
  const std::optional<int64_t> total = checked_mul(num_samples(), sample_elements_);
  BURST_ASSERT(total.has_value() && *total == static_cast<int64_t>(features_.size()),
               "features hold num_samples * sample_elements floats");
  BURST_ASSERT(num_classes_ >= 1, "a dataset has at least one class");
  for (const int64_t label : labels_) {
    BURST_ASSERT(label >= 0 && label < num_classes_, "labels lie in [0, num_classes)");
  }
}

const float* Dataset::sample_features(int64_t index) const {
  BURST_ASSERT(index >= 0 && index < num_samples(), "sample index in range");
  return features_.data() + index * sample_elements_;
}

}  // namespace burst::data
