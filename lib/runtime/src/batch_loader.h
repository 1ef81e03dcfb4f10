#pragma once
// One rank's samples of each step, loaded ahead of the step (internal to lib/runtime).
// A plan reads the same sample ranges [begin, end) of every global batch, so while step s
// runs, a background thread loads step s + 1's samples for the ranges this rank read
// before. The first step, and any range not read before, load when asked. What the step
// waited for is its data time (StepTimes::data_ms).
#include <chrono>
#include <cstdint>
#include <future>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "burst/data/dataset.h"
#include "burst/runtime/plan_executor.h"

namespace burst::runtime::detail {

class BatchLoader {
 public:
  explicit BatchLoader(const data::Dataset& dataset) : dataset_(dataset) {}
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // The samples of step `step`, whose global batch is `indices` (dataset indices, in batch
  // order). Valid until the next call; waits for the background load of this step.
  const BatchSource& begin_step(int64_t step, std::vector<int64_t> indices);
  // Starts loading step `step` (the one after the current) in the background.
  void load_ahead(int64_t step, std::vector<int64_t> indices);
  // The time the current step has waited for samples so far, in ms: in begin_step (for the
  // background load, before the step's program starts) and while the program ran.
  double waited_ms() const { return waited_ms_; }
  double waited_before_step_ms() const { return waited_before_step_ms_; }

 private:
  using Range = std::pair<int64_t, int64_t>;
  struct Loaded {
    int64_t step = -1;
    std::vector<int64_t> indices;
    std::map<Range, torch::Tensor> features;
    std::map<Range, torch::Tensor> labels;
  };
  static Loaded load(const data::Dataset& dataset, int64_t step, std::vector<int64_t> indices,
                     const std::set<Range>& feature_ranges, const std::set<Range>& label_ranges);
  torch::Tensor take(std::map<Range, torch::Tensor>& loaded, std::set<Range>& ranges, Range range, bool features);

  const data::Dataset& dataset_;
  std::set<Range> feature_ranges_;  // read by earlier steps
  std::set<Range> label_ranges_;
  std::future<Loaded> ahead_;
  Loaded current_;
  BatchSource source_;
  double waited_ms_ = 0;
  double waited_before_step_ms_ = 0;
};

}  // namespace burst::runtime::detail
