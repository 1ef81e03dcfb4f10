// Fashion-MNIST from Debian's dataset-fashion-mnist package.
#include <sys/stat.h>

#include <fmt/format.h>

#include "burst/data/idx.h"
#include "burst/util/error.h"

namespace burst::data {

Dataset load_fashion_mnist(const std::string& directory, Split split) {
  const std::string prefix = split == Split::train ? "train" : "t10k";
  const std::string images = fmt::format("{}/{}-images-idx3-ubyte.gz", directory, prefix);
  const std::string labels = fmt::format("{}/{}-labels-idx1-ubyte.gz", directory, prefix);
  for (const std::string& path : {images, labels}) {
    struct stat info {};
    if (stat(path.c_str(), &info) != 0) {
      throw UserError(fmt::format(
          "Fashion-MNIST file '{}' is missing (install Debian's dataset-fashion-mnist package, "
          "e.g. with scripts/setup.sh, or give the directory that holds the files)",
          path));
    }
  }
  const std::string name = split == Split::train ? "fashion-mnist-train" : "fashion-mnist-test";
  Dataset dataset = load_idx_dataset(name, images, labels, kFashionMnistClasses);
  if (dataset.sample_shape() != std::vector<int64_t>{1, 28, 28}) {
    throw UserError(fmt::format("Fashion-MNIST file '{}' holds images of {}x{} pixels, not 28x28",
                                images, dataset.sample_shape()[1], dataset.sample_shape()[2]));
  }
  return dataset;
}

}  // namespace burst::data
