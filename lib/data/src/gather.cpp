// Copying a rank's sample range of a global batch into its own buffers.
#include <algorithm>
#include <vector>

#include "burst/data/dataset.h"
#include "burst/util/error.h"

namespace burst::data {
namespace {

void check_range(const Dataset& dataset, const std::vector<int64_t>& batch_indices,
                 int64_t begin, int64_t end) {
  BURST_ASSERT(0 <= begin && begin <= end &&
                   end <= static_cast<int64_t>(batch_indices.size()),
               "gather range lies inside the batch");
  for (int64_t position = begin; position < end; ++position) {
    const int64_t index = batch_indices[position];
    BURST_ASSERT(index >= 0 && index < dataset.num_samples(), "batch index names a sample");
  }
}

}  // namespace

void gather_features(const Dataset& dataset, const std::vector<int64_t>& batch_indices,
                     int64_t begin, int64_t end, float* features_out) {
  check_range(dataset, batch_indices, begin, end);
  const int64_t elements = dataset.sample_elements();
  std::vector<int64_t> labels(static_cast<size_t>(dataset.labels_per_sample()));
  for (int64_t position = begin; position < end; ++position) {
    dataset.read_sample(batch_indices[position], features_out + (position - begin) * elements, labels.data());
  }
}

void gather_labels(const Dataset& dataset, const std::vector<int64_t>& batch_indices,
                   int64_t begin, int64_t end, int64_t* labels_out) {
  check_range(dataset, batch_indices, begin, end);
  const int64_t per_sample = dataset.labels_per_sample();
  if (dataset.in_memory()) {  // labels alone, without copying the features
    for (int64_t position = begin; position < end; ++position) {
      const auto first = dataset.labels().begin() + batch_indices[position] * per_sample;
      std::copy(first, first + per_sample, labels_out + (position - begin) * per_sample);
    }
    return;
  }
  std::vector<float> features(static_cast<size_t>(dataset.sample_elements()));
  for (int64_t position = begin; position < end; ++position) {
    dataset.read_sample(batch_indices[position], features.data(), labels_out + (position - begin) * per_sample);
  }
}

void gather(const Dataset& dataset, const std::vector<int64_t>& batch_indices, int64_t begin,
            int64_t end, float* features_out, int64_t* labels_out) {
  check_range(dataset, batch_indices, begin, end);
  const int64_t elements = dataset.sample_elements();
  const int64_t per_sample = dataset.labels_per_sample();
  for (int64_t position = begin; position < end; ++position) {
    dataset.read_sample(batch_indices[position], features_out + (position - begin) * elements,
                        labels_out + (position - begin) * per_sample);
  }
}

}  // namespace burst::data
