#include "burst/data/sampler.h"

#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "burst/util/splitmix.h"
#include "burst/util/checked_math.h"
#include "burst/util/error.h"

namespace burst::data {
namespace {

constexpr uint64_t kShuffleStream = 0x73687566666c6521ULL;  // "shuffle!"

}  // namespace

EpochOrder::EpochOrder(int64_t epoch, std::vector<int64_t> permutation, int64_t global_batch)
    : epoch_(epoch), permutation_(std::move(permutation)), global_batch_(global_batch) {
  BURST_ASSERT(global_batch_ >= 1 && global_batch_ <= static_cast<int64_t>(permutation_.size()),
               "an epoch holds at least one full global batch");
}

int64_t EpochOrder::steps() const {
  return static_cast<int64_t>(permutation_.size()) / global_batch_;
}

std::vector<int64_t> EpochOrder::batch(int64_t step) const {
  BURST_ASSERT(step >= 0 && step < steps(), "step lies inside the epoch");
  const auto first = permutation_.begin() + step * global_batch_;
  return std::vector<int64_t>(first, first + global_batch_);
}

EpochSampler::EpochSampler(int64_t dataset_size, int64_t global_batch, uint64_t seed)
    : dataset_size_(dataset_size), global_batch_(global_batch), seed_(seed) {
  if (dataset_size_ < 1) {
    throw UserError(fmt::format("sampler: the dataset is empty ({} samples)", dataset_size_));
  }
  if (global_batch_ < 1) {
    throw UserError(fmt::format("sampler: global batch must be >= 1, got {}", global_batch_));
  }
  if (global_batch_ > dataset_size_) {
    throw UserError(fmt::format(
        "sampler: global batch {} is larger than the dataset ({} samples); only full batches "
        "run, so an epoch would have no step",
        global_batch_, dataset_size_));
  }
}

EpochOrder EpochSampler::epoch_order(int64_t epoch) const {
  if (epoch < 0) throw UserError(fmt::format("sampler: epoch must be >= 0, got {}", epoch));
  std::vector<int64_t> permutation(static_cast<size_t>(dataset_size_));
  std::iota(permutation.begin(), permutation.end(), int64_t{0});
  // Fisher-Yates (Durstenfeld): for i = n-1 .. 1 swap element i with a uniform j in [0, i].
  util::SplitMix64 random(util::derive_seed(seed_ ^ kShuffleStream, static_cast<uint64_t>(epoch)));
  for (int64_t i = dataset_size_ - 1; i >= 1; --i) {
    const int64_t j = static_cast<int64_t>(random.below(static_cast<uint64_t>(i) + 1));
    std::swap(permutation[i], permutation[j]);
  }
  return EpochOrder(epoch, std::move(permutation), global_batch_);
}

std::vector<int64_t> EpochSampler::batch(int64_t epoch, int64_t step) const {
  return epoch_order(epoch).batch(step);
}

SamplerPosition EpochSampler::position(int64_t global_step) const {
  if (global_step < 0) {
    throw UserError(fmt::format("sampler: global step must be >= 0, got {}", global_step));
  }
  return SamplerPosition{global_step / steps_per_epoch(), global_step % steps_per_epoch()};
}

int64_t EpochSampler::global_step(const SamplerPosition& position) const {
  BURST_ASSERT(position.step >= 0 && position.step < steps_per_epoch(),
               "step lies inside the epoch");
  if (position.epoch < 0) {
    throw UserError(fmt::format("sampler: epoch must be >= 0, got {}", position.epoch));
  }
  const std::optional<int64_t> start = checked_mul(position.epoch, steps_per_epoch());
  const std::optional<int64_t> step = start ? checked_add(*start, position.step) : std::nullopt;
  if (!step) {
    throw UserError(fmt::format("sampler: epoch {} is too large ({} steps per epoch)",
                                position.epoch, steps_per_epoch()));
  }
  return *step;
}

}  // namespace burst::data
