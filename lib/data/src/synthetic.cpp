// Deterministic synthetic classification data (see dataset.h for the recipe).
#include <fmt/format.h>

#include "burst/data/dataset.h"
#include "burst/util/splitmix.h"
#include "burst/util/checked_math.h"
#include "burst/util/error.h"

namespace burst::data {
namespace {

// Stream tags keep the prototypes' and the samples' random numbers apart.
constexpr uint64_t kPrototypeStream = 0x70726f746f747970ULL;  // "prototyp"
constexpr uint64_t kSampleStream = 0x73616d706c657321ULL;     // "samples!"

// Elements per sample and in total, or UserError naming the field.
int64_t checked_total_elements(const SyntheticSpec& spec, int64_t* sample_elements) {
  if (spec.num_samples < 1) {
    throw UserError(fmt::format("synthetic dataset: num_samples must be >= 1, got {}",
                                spec.num_samples));
  }
  if (spec.num_classes < 1) {
    throw UserError(fmt::format("synthetic dataset: num_classes must be >= 1, got {}",
                                spec.num_classes));
  }
  if (spec.sample_shape.empty()) {
    throw UserError("synthetic dataset: sample_shape needs at least one dimension");
  }
  const auto too_big = [&] {
    return UserError(fmt::format(
        "synthetic dataset: {} samples of shape [{}] exceed the limit of {} floats",
        spec.num_samples, fmt::join(spec.sample_shape, ", "), kMaxDatasetElements));
  };
  int64_t elements = 1;
  for (const int64_t extent : spec.sample_shape) {
    if (extent < 1) {
      throw UserError(fmt::format("synthetic dataset: sample_shape [{}] has an extent below 1",
                                  fmt::join(spec.sample_shape, ", ")));
    }
    const std::optional<int64_t> product = checked_mul(elements, extent);
    if (!product || *product > kMaxDatasetElements) throw too_big();
    elements = *product;
  }
  const std::optional<int64_t> total = checked_mul(elements, spec.num_samples);
  if (!total || *total > kMaxDatasetElements) throw too_big();
  // Prototypes take num_classes samples' worth of floats too.
  const std::optional<int64_t> prototypes = checked_mul(elements, spec.num_classes);
  if (!prototypes || *prototypes > kMaxDatasetElements) throw too_big();
  *sample_elements = elements;
  return *total;
}

// Token walks (dataset.h): ids s_0 .. s_{T-1}, labels s_1 .. s_T.
Dataset synthetic_tokens(const SyntheticSpec& spec, int64_t tokens) {
  std::vector<float> ids(static_cast<size_t>(spec.num_samples * tokens));
  std::vector<int64_t> labels(ids.size());
  const auto vocab = static_cast<uint64_t>(spec.vocab);
  for (int64_t sample = 0; sample < spec.num_samples; ++sample) {
    util::SplitMix64 random(util::derive_seed(spec.seed ^ kSampleStream, static_cast<uint64_t>(sample)));
    uint64_t token = random.below(vocab);
    for (int64_t t = 0; t < tokens; ++t) {
      const auto at = static_cast<size_t>(sample * tokens + t);
      ids[at] = static_cast<float>(token);
      token = (token + 1 + random.below(2)) % vocab;
      labels[at] = static_cast<int64_t>(token);
    }
  }
  if (spec.sequence_classes > 0) {  // one label a sample: the first id mod the classes
    std::vector<int64_t> classes(static_cast<size_t>(spec.num_samples));
    for (int64_t sample = 0; sample < spec.num_samples; ++sample) {
      classes[static_cast<size_t>(sample)] = static_cast<int64_t>(ids[static_cast<size_t>(sample * tokens)]) % spec.sequence_classes;
    }
    return Dataset("synthetic", {tokens}, spec.sequence_classes, std::move(ids), std::move(classes), 1, true);
  }
  return Dataset("synthetic", {tokens}, spec.vocab, std::move(ids), std::move(labels), tokens, true);
}

}  // namespace

Dataset synthetic_dataset(const SyntheticSpec& spec) {
  if (spec.vocab != 0) {
    if (spec.vocab < 1 || spec.vocab > (int64_t{1} << 24)) {
      throw UserError(fmt::format("synthetic dataset: vocab must lie in [1, 2^24], got {}", spec.vocab));
    }
    if (spec.sample_shape.size() != 1) {
      throw UserError(fmt::format("synthetic dataset: token samples are [T], not [{}]", fmt::join(spec.sample_shape, ", ")));
    }
    int64_t elements = 0;
    SyntheticSpec checked = spec;
    checked.num_classes = 1;  // token data has no prototypes
    checked_total_elements(checked, &elements);
    return synthetic_tokens(spec, elements);
  }
  int64_t elements = 0;
  const int64_t total = checked_total_elements(spec, &elements);

  std::vector<float> prototypes(static_cast<size_t>(elements * spec.num_classes));
  for (int64_t label = 0; label < spec.num_classes; ++label) {
    util::SplitMix64 random(util::derive_seed(spec.seed ^ kPrototypeStream, static_cast<uint64_t>(label)));
    for (int64_t element = 0; element < elements; ++element) {
      prototypes[label * elements + element] = random.unit_float();
    }
  }

  std::vector<float> features(static_cast<size_t>(total));
  std::vector<int64_t> labels(static_cast<size_t>(spec.num_samples));
  for (int64_t sample = 0; sample < spec.num_samples; ++sample) {
    util::SplitMix64 random(util::derive_seed(spec.seed ^ kSampleStream, static_cast<uint64_t>(sample)));
    const int64_t label =
        static_cast<int64_t>(random.below(static_cast<uint64_t>(spec.num_classes)));
    labels[sample] = label;
    const float* prototype = prototypes.data() + label * elements;
    float* out = features.data() + sample * elements;
    for (int64_t element = 0; element < elements; ++element) {
      // (a + b) * 0.5: one rounded add and an exact halving, so no compiler can fuse it
      // into a differently rounded multiply-add.
      out[element] = (prototype[element] + random.unit_float()) * 0.5f;
    }
  }
  return Dataset("synthetic", spec.sample_shape, spec.num_classes, std::move(features),
                 std::move(labels));
}

}  // namespace burst::data
