#pragma once
// Datasets (no libtorch): every sample is a float tensor of one fixed per-sample shape
// (C, H, W for images) plus an int64 class label; or, for language models, a sequence of T
// token ids (held as floats, exact below 2^24) with T next-token labels. A dataset holds its
// samples in memory (synthetic data, IDX files) or reads each on demand from a SampleStore
// (memory-mapped arrays, token files, image folders: user_data.h). The runtime copies the
// samples a rank needs into its own input tensors with gather_features / gather_labels.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace burst::data {

// Sanity limit on the float elements a dataset may hold (1 GiB of floats): a bigger
// synthetic dataset or IDX file is a mistake on a command line or a corrupt file.
inline constexpr int64_t kMaxDatasetElements = int64_t{1} << 28;

// Where an on-demand dataset's samples come from. read() may run on several threads at once
// (the runtime's loader runs ahead of the step): it keeps no mutable state.
class SampleStore {
 public:
  virtual ~SampleStore() = default;
  // Writes sample `index` (in [0, the dataset's num_samples)): sample_elements floats and
  // labels_per_sample labels. Throws RunFailure when the data cannot be read (an image that
  // stopped decoding since it was listed), naming the file.
  virtual void read(int64_t index, float* features, int64_t* labels) const = 0;
};

// What a dataset's samples are, apart from their values.
struct SampleLayout {
  std::string name;                   // for messages and the log: "npy:/data/x", ...
  std::vector<int64_t> sample_shape;  // each >= 1
  int64_t num_classes = 0;            // >= 1; labels lie in [0, num_classes)
  int64_t labels_per_sample = 1;      // 1, or T next tokens
  bool tokens = false;                // features are token ids
};

class Dataset {
 public:
  Dataset() = default;
  // Takes ownership of the buffers. Internal invariants (BURST_ASSERT, the loaders check
  // user input first): every sample_shape entry >= 1; features.size() ==
  // labels.size() * sample_elements(); num_classes >= 1 and every label in [0, num_classes).
  // labels_per_sample: 1 for a class label, T for a token sequence's next tokens (labels
  // then holds num_samples x T, sample-major); tokens: the features are token ids.
  Dataset(std::string name, std::vector<int64_t> sample_shape, int64_t num_classes,
          std::vector<float> features, std::vector<int64_t> labels, int64_t labels_per_sample = 1,
          bool tokens = false);
  // On demand: `num_samples` (>= 1) samples read from `store`, which checked its labels.
  Dataset(const SampleLayout& layout, int64_t num_samples, std::shared_ptr<const SampleStore> store);

  const std::string& name() const { return name_; }
  bool in_memory() const { return store_ == nullptr; }
  int64_t num_samples() const { return num_samples_; }
  int64_t labels_per_sample() const { return labels_per_sample_; }
  bool tokens() const { return tokens_; }  // features are token ids (int64 inputs)
  // Shape of one sample, e.g. {1, 28, 28} (channels, height, width) for Fashion-MNIST.
  const std::vector<int64_t>& sample_shape() const { return sample_shape_; }
  // Product of sample_shape: the floats of one sample.
  int64_t sample_elements() const { return sample_elements_; }
  int64_t num_classes() const { return num_classes_; }
  // In memory only (asserted): num_samples × sample_elements floats, sample-major (sample i
  // starts at i * elements), and labels_per_sample labels per sample, in [0, num_classes).
  const std::vector<float>& features() const;
  const std::vector<int64_t>& labels() const;
  // In memory only: the first float of sample `index` (asserted in [0, num_samples)).
  const float* sample_features(int64_t index) const;
  // Any dataset: sample `index`'s floats and labels into the caller's buffers.
  void read_sample(int64_t index, float* features, int64_t* labels) const;

 private:
  std::string name_;
  std::vector<int64_t> sample_shape_;
  int64_t sample_elements_ = 0;
  int64_t num_classes_ = 0;
  int64_t num_samples_ = 0;
  int64_t labels_per_sample_ = 1;
  bool tokens_ = false;
  std::vector<float> features_;
  std::vector<int64_t> labels_;
  std::shared_ptr<const SampleStore> store_;  // null: in memory
};

// A deterministic synthetic classification dataset: the same spec gives the same bytes on
// every platform (SplitMix64, see burst/util/splitmix.h). Each class c has a fixed random prototype
// p_c with elements in [0, 1); sample i draws its label uniformly, then each element is
// (p_label + u) / 2 with u uniform in [0, 1). Values lie in [0, 1) and classes are
// separable, so a model can learn it (loss falls), which makes smoke tests meaningful.
// Samples are counter-based (sample i depends only on seed and i).
//
// With `vocab` > 0 it is token data for a language model instead: sample_shape is [T], and
// sample i is a walk s_0 .. s_T over the vocabulary (s_0 uniform, each step +1 or +2 mod
// vocab, drawn per sample), with ids s_0 .. s_{T-1} and next-token labels s_1 .. s_T
// (num_classes = vocab). The walk makes the next token predictable, so the loss falls.
struct SyntheticSpec {
  int64_t num_samples = 0;            // >= 1
  std::vector<int64_t> sample_shape;  // each >= 1, e.g. {1, 28, 28}; [T] for tokens
  int64_t num_classes = 0;            // >= 1
  uint64_t seed = 0;
  int64_t vocab = 0;                  // > 0: token sequences over [0, vocab), at most 2^24
  // > 0 with vocab: one label a sample instead of next tokens, the walk's first id mod
  // sequence_classes (a task for a sequence classifier, as BERT's, whose pooler reads token 0).
  int64_t sequence_classes = 0;
};

// Throws UserError naming the field when the spec is out of range or the dataset would
// exceed kMaxDatasetElements floats.
Dataset synthetic_dataset(const SyntheticSpec& spec);

// Copies samples batch_indices[begin, end) of a global batch (dataset indices, e.g. from
// EpochSampler) into caller buffers, in batch order: features_out receives
// (end - begin) * sample_elements floats, labels_out (end - begin) * labels_per_sample labels. This is how a
// rank takes only its own sample range [begin, end) of the plan. Asserts
// 0 <= begin <= end <= batch_indices.size() and every index in [0, num_samples).
void gather_features(const Dataset& dataset, const std::vector<int64_t>& batch_indices,
                     int64_t begin, int64_t end, float* features_out);
void gather_labels(const Dataset& dataset, const std::vector<int64_t>& batch_indices,
                   int64_t begin, int64_t end, int64_t* labels_out);
// Both of the above.
void gather(const Dataset& dataset, const std::vector<int64_t>& batch_indices, int64_t begin,
            int64_t end, float* features_out, int64_t* labels_out);

}  // namespace burst::data
