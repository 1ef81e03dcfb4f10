// --dataset KIND:PATH: the word, and the memory-mapped kinds (npy:DIR, tokens:FILE).
#include "burst/data/user_data.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "mapped_file.h"
#include "npy.h"

namespace burst::data {
namespace {

using detail::MappedFile;
using detail::NpyArray;

// Token ids are held as floats in a Dataset: exact below 2^24.
constexpr int64_t kLargestTokenId = int64_t{1} << 24;

int64_t product_of(const std::vector<int64_t>& shape, size_t from) {
  int64_t product = 1;
  for (size_t i = from; i < shape.size(); ++i) product *= shape[i];
  return product;
}

// Reads element `i` of an integer array of 2, 4 or 8 little-endian bytes.
int64_t integer_at(const uint8_t* data, int64_t bytes, int64_t i) {
  if (bytes == 8) {
    int64_t value = 0;
    std::memcpy(&value, data + i * 8, 8);
    return value;
  }
  if (bytes == 4) {
    uint32_t value = 0;
    std::memcpy(&value, data + i * 4, 4);
    return value;
  }
  uint16_t value = 0;
  std::memcpy(&value, data + i * 2, 2);
  return value;
}

// inputs.npy and labels.npy, mapped; samples are rows of both.
class NpyStore : public SampleStore {
 public:
  NpyStore(const std::string& directory, const ModelSamples& model)
      : inputs_file_(directory + "/inputs.npy", "--dataset npy: inputs"),
        labels_file_(directory + "/labels.npy", "--dataset npy: labels"),
        inputs_(detail::parse_npy(inputs_file_)),
        labels_(detail::parse_npy(labels_file_)) {
    check_inputs(model);
    check_labels(model);
  }

  SampleLayout layout(const std::string& directory, int64_t classes) const {
    SampleLayout layout;
    layout.name = "npy:" + directory;
    layout.sample_shape.assign(inputs_.shape.begin() + 1, inputs_.shape.end());
    layout.num_classes = classes;
    layout.labels_per_sample = product_of(labels_.shape, 1);
    layout.tokens = inputs_.descr == "<i8";
    return layout;
  }
  int64_t samples() const { return inputs_.shape[0]; }

  void read(int64_t index, float* features, int64_t* labels) const override {
    const int64_t elements = product_of(inputs_.shape, 1);
    const int64_t first = index * elements;
    if (inputs_.descr == "<f4") {
      std::memcpy(features, inputs_.data + first * 4, static_cast<size_t>(elements) * 4);
    } else if (inputs_.descr == "|u1") {
      for (int64_t e = 0; e < elements; ++e) features[e] = static_cast<float>(inputs_.data[first + e]) / 255.0f;
    } else {
      for (int64_t e = 0; e < elements; ++e) features[e] = static_cast<float>(integer_at(inputs_.data, 8, first + e));
    }
    const int64_t per_sample = product_of(labels_.shape, 1);
    for (int64_t l = 0; l < per_sample; ++l) labels[l] = integer_at(labels_.data, labels_.element_bytes, index * per_sample + l);
  }

 private:
  void check_inputs(const ModelSamples& model) const {
    const std::string& path = inputs_file_.path();
    if (inputs_.descr != "<f4" && inputs_.descr != "|u1" && inputs_.descr != "<i8") {
      throw UserError(fmt::format("'{}' holds {}: inputs must be float32 (<f4), uint8 (|u1, scaled by 1/255) or int64 "
                                  "token ids (<i8)", path, inputs_.descr));
    }
    if (inputs_.shape.size() < 2 || inputs_.shape[0] < 1) {
      throw UserError(fmt::format("'{}' has shape ({}): inputs are [samples, ...] with at least one sample", path,
                                  fmt::join(inputs_.shape, ", ")));
    }
    if (inputs_.descr != "<i8") return;
    const int64_t vocab = model.vocab > 0 ? std::min(model.vocab, kLargestTokenId) : kLargestTokenId;
    for (int64_t i = 0; i < inputs_.elements; ++i) {
      const int64_t id = integer_at(inputs_.data, 8, i);
      if (id < 0 || id >= vocab) {
        throw UserError(fmt::format("'{}': token id {} at element {} is outside the model's vocabulary [0, {})", path,
                                    id, i, vocab));
      }
    }
  }

  void check_labels(const ModelSamples& model) const {
    const std::string& path = labels_file_.path();
    if (labels_.descr != "<i8" && labels_.descr != "<i4") {
      throw UserError(fmt::format("'{}' holds {}: labels must be int64 (<i8) or int32 (<i4)", path, labels_.descr));
    }
    if (labels_.shape.empty() || labels_.shape[0] != inputs_.shape[0]) {
      throw UserError(fmt::format("'{}' has shape ({}) but '{}' has {} samples: labels are [samples] or [samples, T]",
                                  path, fmt::join(labels_.shape, ", "), inputs_file_.path(), inputs_.shape[0]));
    }
    for (int64_t i = 0; i < labels_.elements; ++i) {
      const int64_t label = integer_at(labels_.data, labels_.element_bytes, i);
      if (label < 0 || label >= model.classes) {
        throw UserError(fmt::format("'{}': label {} at element {} is outside the model's {} classes [0, {})", path,
                                    label, i, model.classes, model.classes));
      }
    }
  }

  MappedFile inputs_file_;
  MappedFile labels_file_;
  NpyArray inputs_;
  NpyArray labels_;
};

// A flat token file; sample i is tokens [i T, i T + T] (T + 1 of them).
class TokenStore : public SampleStore {
 public:
  TokenStore(const std::string& path, const ModelSamples& model, TokenWidth width)
      : file_(path, "--dataset tokens"), bytes_(width == TokenWidth::uint16 ? 2 : 4) {
    if (model.vocab <= 0 || model.sample_shape.size() != 1) {
      throw UserError(fmt::format("--dataset tokens:{} needs a model whose input is a sequence of token ids", path));
    }
    sequence_ = model.sample_shape[0];
    if (file_.size() % static_cast<size_t>(bytes_) != 0) {
      throw UserError(fmt::format("'{}' has {} bytes, not a whole number of {}-byte tokens (--token-width)", path,
                                  file_.size(), bytes_));
    }
    tokens_ = static_cast<int64_t>(file_.size()) / bytes_;
    if (tokens_ < sequence_ + 1) {
      throw UserError(fmt::format("'{}' holds {} tokens: a sample needs the model's {} + 1", path, tokens_, sequence_));
    }
    const int64_t vocab = std::min(model.vocab, kLargestTokenId);
    for (int64_t i = 0; i < tokens_; ++i) {
      const int64_t id = integer_at(file_.data(), bytes_, i);
      if (id >= vocab) {
        throw UserError(fmt::format("'{}': token {} at position {} is outside the model's vocabulary [0, {})", path, id,
                                    i, vocab));
      }
    }
  }

  int64_t sequence() const { return sequence_; }
  int64_t samples() const { return (tokens_ - 1) / sequence_; }

  void read(int64_t index, float* features, int64_t* labels) const override {
    const int64_t first = index * sequence_;
    for (int64_t t = 0; t < sequence_; ++t) {
      features[t] = static_cast<float>(integer_at(file_.data(), bytes_, first + t));
      labels[t] = integer_at(file_.data(), bytes_, first + t + 1);
    }
  }

 private:
  MappedFile file_;
  int64_t bytes_;
  int64_t sequence_ = 0;
  int64_t tokens_ = 0;
};

}  // namespace

DatasetSpec parse_dataset_spec(const std::string& text) {
  if (text == "synthetic" || text == "fashion-mnist") return {text, ""};
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  if (colon == std::string::npos || (kind != "npy" && kind != "tokens" && kind != "images")) {
    throw UserError(fmt::format("dataset '{}' is not synthetic, fashion-mnist, npy:DIR, tokens:FILE or images:DIR", text));
  }
  const std::string path = text.substr(colon + 1);
  if (path.empty()) throw UserError(fmt::format("dataset '{}' names no path after '{}:'", text, kind));
  return {kind, path};
}

bool is_user_dataset(const DatasetSpec& spec) {
  return spec.kind == "npy" || spec.kind == "tokens" || spec.kind == "images";
}

Dataset load_npy_dataset(const std::string& directory, const ModelSamples& model) {
  auto store = std::make_shared<NpyStore>(directory, model);
  return Dataset(store->layout(directory, model.classes), store->samples(), store);
}

Dataset load_token_dataset(const std::string& path, const ModelSamples& model, TokenWidth width) {
  auto store = std::make_shared<TokenStore>(path, model, width);
  SampleLayout layout{"tokens:" + path, {store->sequence()}, model.vocab, store->sequence(), true};
  return Dataset(layout, store->samples(), store);
}

Dataset load_user_dataset(const DatasetSpec& spec, const ModelSamples& model, const UserDataOptions& options) {
  BURST_ASSERT(is_user_dataset(spec), "a user dataset");
  if (spec.kind == "npy") return load_npy_dataset(spec.path, model);
  if (spec.kind == "tokens") return load_token_dataset(spec.path, model, options.token_width);
  return load_image_folder(spec.path, model, options.images);
}

}  // namespace burst::data
