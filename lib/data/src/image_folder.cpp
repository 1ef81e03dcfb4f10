// images:DIR: class sub-folders of PNG or JPEG files, decoded with stb_image (Debian's
// libstb-dev) when a sample is read.
#include <stb_image.h>
#include <stb_image_resize.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "burst/data/user_data.h"
#include "burst/util/error.h"

namespace burst::data {
namespace {

namespace fs = std::filesystem;

bool is_image_file(const fs::path& path) {
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension == ".png" || extension == ".jpg" || extension == ".jpeg";
}

std::vector<fs::path> sorted_entries(const fs::path& directory, bool directories) {
  std::vector<fs::path> entries;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, error)) {
    if (directories ? entry.is_directory() : entry.is_regular_file() && is_image_file(entry.path())) {
      entries.push_back(entry.path());
    }
  }
  if (error) throw UserError(fmt::format("--dataset images: cannot list '{}': {}", directory.string(), error.message()));
  std::sort(entries.begin(), entries.end());
  return entries;
}

// One value per channel: `given` has one entry (for all) or `channels`.
std::vector<double> per_channel(const std::vector<double>& given, int64_t channels, const char* what) {
  if (given.size() != 1 && static_cast<int64_t>(given.size()) != channels) {
    throw UserError(fmt::format("--image-{} has {} values; the model's images have {} channels (give 1 or {})", what,
                                given.size(), channels, channels));
  }
  for (const double value : given) {
    if (!std::isfinite(value) || (std::string(what) == "std" && value <= 0)) {
      throw UserError(fmt::format("--image-{} {} is not {}", what, value, std::string(what) == "std" ? "finite and > 0" : "finite"));
    }
  }
  return given.size() == 1 ? std::vector<double>(static_cast<size_t>(channels), given[0]) : given;
}

class ImageStore : public SampleStore {
 public:
  ImageStore(std::vector<fs::path> files, std::vector<int64_t> labels, const ModelSamples& model,
             const ImageNormalisation& normalisation)
      : files_(std::move(files)),
        labels_(std::move(labels)),
        channels_(model.sample_shape[0]),
        height_(model.sample_shape[1]),
        width_(model.sample_shape[2]),
        mean_(per_channel(normalisation.mean, channels_, "mean")),
        std_(per_channel(normalisation.std, channels_, "std")) {}

  void read(int64_t index, float* features, int64_t* labels) const override {
    const std::string path = files_[static_cast<size_t>(index)].string();
    int width = 0;
    int height = 0;
    int stored = 0;
    std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
        stbi_load(path.c_str(), &width, &height, &stored, static_cast<int>(channels_)), stbi_image_free);
    if (!pixels) throw RunFailure(fmt::format("image '{}' does not decode: {}", path, stbi_failure_reason()));
    const std::vector<stbi_uc> fitted = fit(pixels.get(), width, height);
    const int64_t plane = height_ * width_;
    for (int64_t y = 0; y < height_; ++y) {
      for (int64_t x = 0; x < width_; ++x) {
        for (int64_t c = 0; c < channels_; ++c) {
          const double value = fitted[static_cast<size_t>((y * width_ + x) * channels_ + c)] / 255.0;
          features[c * plane + y * width_ + x] = static_cast<float>((value - mean_[c]) / std_[c]);
        }
      }
    }
    labels[0] = labels_[static_cast<size_t>(index)];
  }

 private:
  // Interleaved pixels of the model's H x W: the image's shorter side resized to the
  // model's, then the centre cropped (an image of the model's size is taken as it is).
  std::vector<stbi_uc> fit(const stbi_uc* pixels, int width, int height) const {
    const double scale = std::max(static_cast<double>(width_) / width, static_cast<double>(height_) / height);
    const int resized_width = std::max(static_cast<int>(width_), static_cast<int>(std::lround(width * scale)));
    const int resized_height = std::max(static_cast<int>(height_), static_cast<int>(std::lround(height * scale)));
    std::vector<stbi_uc> resized(pixels, pixels + static_cast<size_t>(width) * height * channels_);
    if (resized_width != width || resized_height != height) {
      resized.assign(static_cast<size_t>(resized_width) * resized_height * channels_, 0);
      stbir_resize_uint8(pixels, width, height, 0, resized.data(), resized_width, resized_height, 0,
                         static_cast<int>(channels_));
    }
    const int64_t left = (resized_width - width_) / 2;
    const int64_t top = (resized_height - height_) / 2;
    std::vector<stbi_uc> cropped(static_cast<size_t>(height_ * width_ * channels_));
    for (int64_t y = 0; y < height_; ++y) {
      const stbi_uc* row = resized.data() + ((top + y) * resized_width + left) * channels_;
      std::copy(row, row + width_ * channels_, cropped.begin() + y * width_ * channels_);
    }
    return cropped;
  }

  std::vector<fs::path> files_;
  std::vector<int64_t> labels_;
  int64_t channels_;
  int64_t height_;
  int64_t width_;
  std::vector<double> mean_;
  std::vector<double> std_;
};

void check_image_model(const std::string& directory, const ModelSamples& model) {
  const std::vector<int64_t>& shape = model.sample_shape;
  if (model.vocab > 0 || shape.size() != 3 || (shape[0] != 1 && shape[0] != 3)) {
    throw UserError(fmt::format("--dataset images:{} needs a model whose input is [1 or 3, H, W] images; its input is "
                                "[{}]{}", directory, fmt::join(shape, ", "), model.vocab > 0 ? " token ids" : ""));
  }
}

}  // namespace

Dataset load_image_folder(const std::string& directory, const ModelSamples& model,
                          const ImageNormalisation& normalisation) {
  check_image_model(directory, model);
  const std::vector<fs::path> classes = sorted_entries(directory, /*directories=*/true);
  if (classes.empty()) throw UserError(fmt::format("--dataset images:{} has no class sub-folders", directory));
  if (static_cast<int64_t>(classes.size()) > model.classes) {
    throw UserError(fmt::format("--dataset images:{} has {} class folders but the model has {} classes", directory,
                                classes.size(), model.classes));
  }
  std::vector<fs::path> files;
  std::vector<int64_t> labels;
  for (size_t label = 0; label < classes.size(); ++label) {
    const std::vector<fs::path> images = sorted_entries(classes[label], /*directories=*/false);
    if (images.empty()) throw UserError(fmt::format("class folder '{}' holds no .png, .jpg or .jpeg file", classes[label].string()));
    for (const fs::path& image : images) {
      int width = 0;
      int height = 0;
      int stored = 0;
      if (stbi_info(image.c_str(), &width, &height, &stored) == 0) {  // its header, not its pixels
        throw UserError(fmt::format("image '{}' does not decode: {}", image.string(), stbi_failure_reason()));
      }
      files.push_back(image);
      labels.push_back(static_cast<int64_t>(label));
    }
  }
  const int64_t samples = static_cast<int64_t>(files.size());
  auto store = std::make_shared<ImageStore>(std::move(files), std::move(labels), model, normalisation);
  return Dataset(SampleLayout{"images:" + directory, model.sample_shape, model.classes, 1, false}, samples, store);
}

}  // namespace burst::data
