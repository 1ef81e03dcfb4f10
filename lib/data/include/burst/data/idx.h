#pragma once
// IDX files (the MNIST / Fashion-MNIST format), gzip-compressed or plain.
//
// Layout: a 4-byte magic number 00 00 <type> <number of dimensions>, then each dimension
// as a big-endian uint32, then the elements in row-major order. Only type 0x08 (unsigned
// byte) is read, the type of every MNIST-family file. Files are untrusted: every problem
// (missing, truncated, bad magic, wrong type or dimensions, sizes over the limit, trailing
// bytes, gzip errors) is a UserError that starts with the path and gives the reason.
#include <cstdint>
#include <string>
#include <vector>

#include "burst/data/dataset.h"

namespace burst::data {

// Limits on what an IDX file may declare: at most 4 dimensions, and at most 1 GiB of
// elements (Fashion-MNIST's training images are 47 MB), so a corrupt header cannot make us
// allocate without bound.
inline constexpr int kMaxIdxDimensions = 4;
inline constexpr int64_t kMaxIdxPayloadBytes = int64_t{1} << 30;

struct IdxArray {
  std::vector<int64_t> dims;   // each >= 1
  std::vector<uint8_t> bytes;  // product(dims) elements, row-major
};

// Reads a whole IDX file of unsigned bytes; gzip is detected from the content, so a
// decompressed copy reads as well. The file must end right after the declared elements.
IdxArray read_idx_file(const std::string& path);

// An image file (3 dimensions: N, H, W) and a label file (1 dimension: N) as a Dataset:
// pixels become floats in [0, 1] (byte / 255), each sample of shape {1, H, W} (C, H, W);
// labels become int64 and must lie in [0, num_classes). UserError naming the path when the
// dimensions are wrong, the counts differ or a label is out of range.
Dataset load_idx_dataset(const std::string& name, const std::string& images_path,
                         const std::string& labels_path, int64_t num_classes);

// Fashion-MNIST as Debian's dataset-fashion-mnist package installs it.
inline constexpr const char* kFashionMnistDirectory = "/usr/share/datasets/fashion-mnist";
inline constexpr int64_t kFashionMnistClasses = 10;
enum class Split { train, test };

// The train split (train-*-ubyte.gz, 60000 samples) or test split (t10k-*-ubyte.gz, 10000
// samples) from `directory`, named "fashion-mnist-train" / "fashion-mnist-test". Samples
// are {1, 28, 28}; anything else is refused. A missing file's error says how to get it.
Dataset load_fashion_mnist(const std::string& directory, Split split);

}  // namespace burst::data
