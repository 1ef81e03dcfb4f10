#include "batch_loader.h"

#include "burst/util/error.h"
#include "worker_io.h"

namespace burst::runtime::detail {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

BatchLoader::~BatchLoader() {
  if (ahead_.valid()) ahead_.wait();  // it reads the dataset: finish before it goes
}

BatchLoader::Loaded BatchLoader::load(const data::Dataset& dataset, int64_t step, std::vector<int64_t> indices,
                                      const std::set<Range>& feature_ranges, const std::set<Range>& label_ranges) {
  Loaded loaded;
  loaded.step = step;
  loaded.indices = std::move(indices);
  for (const Range& range : feature_ranges) {
    loaded.features[range] = features_of(dataset, loaded.indices, range.first, range.second);
  }
  for (const Range& range : label_ranges) {
    loaded.labels[range] = labels_of(dataset, loaded.indices, range.first, range.second);
  }
  return loaded;
}

void BatchLoader::load_ahead(int64_t step, std::vector<int64_t> indices) {
  if (ahead_.valid()) ahead_.wait();
  ahead_ = std::async(std::launch::async, &BatchLoader::load, std::cref(dataset_), step, std::move(indices),
                      feature_ranges_, label_ranges_);
}

const BatchSource& BatchLoader::begin_step(int64_t step, std::vector<int64_t> indices) {
  waited_ms_ = 0;
  waited_before_step_ms_ = 0;
  current_ = Loaded{};
  if (ahead_.valid()) {
    const Clock::time_point start = Clock::now();
    Loaded loaded = ahead_.get();  // rethrows a sample that failed to read
    waited_before_step_ms_ = ms_since(start);
    waited_ms_ += waited_before_step_ms_;
    if (loaded.step == step) current_ = std::move(loaded);
  }
  if (current_.step != step) {
    current_.step = step;
    current_.indices = std::move(indices);
  }
  source_.features = [this](graph::LayerId, int64_t begin, int64_t end) {
    return take(current_.features, feature_ranges_, {begin, end}, true);
  };
  source_.labels = [this](graph::LayerId, int64_t begin, int64_t end) {
    return take(current_.labels, label_ranges_, {begin, end}, false);
  };
  return source_;
}

torch::Tensor BatchLoader::take(std::map<Range, torch::Tensor>& loaded, std::set<Range>& ranges, Range range,
                                bool features) {
  const auto found = loaded.find(range);
  if (found != loaded.end()) {
    torch::Tensor tensor = std::move(found->second);
    loaded.erase(found);  // a second reader of the range loads its own
    return tensor;
  }
  ranges.insert(range);  // from now on loaded ahead
  const Clock::time_point start = Clock::now();
  torch::Tensor tensor = features ? features_of(dataset_, current_.indices, range.first, range.second)
                                  : labels_of(dataset_, current_.indices, range.first, range.second);
  waited_ms_ += ms_since(start);
  return tensor;
}

}  // namespace burst::runtime::detail
