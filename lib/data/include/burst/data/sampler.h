#pragma once
// The deterministic shuffling sampler: which dataset samples form global batch `step` of
// epoch `epoch`. Every rank evaluates it on its own and gets the same answer (no
// communication), on every platform: each epoch's order is a Fisher-Yates shuffle driven
// by SplitMix64 (burst/util/splitmix.h), seeded from (seed, epoch) alone.
//
// drop_last: an epoch has steps_per_epoch = dataset_size / global_batch steps (rounded
// down). The dataset_size % global_batch samples at the end of an epoch's permutation are
// skipped that epoch; since every epoch reshuffles, a different few are skipped each time.
// Every global batch is full, so the global batch B really is fixed (what the plan and the
// single-device equivalence assume).
#include <cstdint>
#include <vector>

namespace burst::data {

// Where training stands: global step g is step g % steps_per_epoch of epoch
// g / steps_per_epoch. A checkpoint stores the global step; resuming maps it back here.
struct SamplerPosition {
  int64_t epoch = 0;
  int64_t step = 0;  // within the epoch, in [0, steps_per_epoch)
  bool operator==(const SamplerPosition& other) const {
    return epoch == other.epoch && step == other.step;
  }
};

// One epoch's order: a permutation of [0, dataset_size), cut into full global batches.
class EpochOrder {
 public:
  EpochOrder(int64_t epoch, std::vector<int64_t> permutation, int64_t global_batch);

  int64_t epoch() const { return epoch_; }
  // The whole permutation (dataset_size indices; the last dataset_size % B are unused).
  const std::vector<int64_t>& permutation() const { return permutation_; }
  int64_t steps() const;
  // Dataset indices of global batch `step` (asserted in [0, steps())): B indices, all
  // distinct; position i of the batch is global sample i of the plan's [0, B).
  std::vector<int64_t> batch(int64_t step) const;

 private:
  int64_t epoch_;
  std::vector<int64_t> permutation_;
  int64_t global_batch_;
};

class EpochSampler {
 public:
  // Throws UserError when dataset_size < 1, global_batch < 1, or global_batch >
  // dataset_size (with drop_last, an epoch would have no step).
  EpochSampler(int64_t dataset_size, int64_t global_batch, uint64_t seed);

  int64_t dataset_size() const { return dataset_size_; }
  int64_t global_batch() const { return global_batch_; }
  int64_t steps_per_epoch() const { return dataset_size_ / global_batch_; }

  // The order of `epoch` (>= 0; UserError otherwise). O(dataset_size): compute it once per
  // epoch and take its batches, rather than calling batch() every step on a big dataset.
  EpochOrder epoch_order(int64_t epoch) const;
  // Shorthand for epoch_order(epoch).batch(step).
  std::vector<int64_t> batch(int64_t epoch, int64_t step) const;

  // Global step -> (epoch, step within the epoch); UserError when global_step < 0.
  SamplerPosition position(int64_t global_step) const;
  // The inverse: epoch * steps_per_epoch + step (step asserted in range; UserError on
  // overflow or a negative epoch).
  int64_t global_step(const SamplerPosition& position) const;

 private:
  int64_t dataset_size_;
  int64_t global_batch_;
  uint64_t seed_;
};

}  // namespace burst::data
