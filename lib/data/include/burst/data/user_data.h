#pragma once
// Users' own data, named KIND:PATH on the command line (--dataset, --val-dataset):
//
//   npy:DIR      DIR/inputs.npy [N, ...] (float32; uint8, scaled by 1/255; int64 token ids)
//                and DIR/labels.npy [N] or [N, T] (int64), memory-mapped;
//   tokens:FILE  a flat file of uint16 (or uint32) token ids, as nanoGPT's train.bin: sample
//                i is the window of T + 1 tokens from i x T, its first T the inputs and its
//                last T the next-token labels; (tokens - 1) / T samples;
//   images:DIR   DIR/<class>/*.png|jpg|jpeg, classes in name order; each image decoded
//                when read, resized (its shorter side to the model's) and centre-cropped to
//                the model's C x H x W, and normalised ((x / 255 - mean) / std per channel).
//
// Every loader checks the data against what the model takes before the first step, and
// throws UserError naming the file and the values involved. Samples are read on demand
// (SampleStore), by index, from any thread.
#include <cstdint>
#include <string>
#include <vector>

#include "burst/data/dataset.h"

namespace burst::data {

// --dataset's word: "synthetic", "fashion-mnist", or KIND:PATH with KIND npy, tokens or images.
struct DatasetSpec {
  std::string kind;  // synthetic, fashion-mnist, npy, tokens, images
  std::string path;  // empty for synthetic and fashion-mnist
};
// UserError naming the text when it is none of the above or a KIND has no PATH.
DatasetSpec parse_dataset_spec(const std::string& text);
bool is_user_dataset(const DatasetSpec& spec);  // npy, tokens or images

// What the model takes, for checking the data against it.
struct ModelSamples {
  std::vector<int64_t> sample_shape;  // of one input sample: [C, H, W], or [T] for tokens
  int64_t classes = 0;                // labels lie in [0, classes) (token models: the vocabulary)
  int64_t vocab = 0;                  // > 0: the input is token ids in [0, vocab)
  bool labels_per_token = true;       // token input: labels are T next tokens, else one a sample
};

// How images:DIR turns pixels into features; one entry per channel, or one for all.
struct ImageNormalisation {
  std::vector<double> mean{0.0};
  std::vector<double> std{1.0};
};

enum class TokenWidth { uint16, uint32 };

struct UserDataOptions {
  ImageNormalisation images;
  TokenWidth token_width = TokenWidth::uint16;
};

// The dataset `spec` names (is_user_dataset), checked against `model`.
Dataset load_user_dataset(const DatasetSpec& spec, const ModelSamples& model, const UserDataOptions& options);

Dataset load_npy_dataset(const std::string& directory, const ModelSamples& model);
Dataset load_token_dataset(const std::string& path, const ModelSamples& model, TokenWidth width);
Dataset load_image_folder(const std::string& directory, const ModelSamples& model, const ImageNormalisation& normalisation);

}  // namespace burst::data
