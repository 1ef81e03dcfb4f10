// A small CNN for Fashion-MNIST ([1, 28, 28] images): two conv-bn-relu-pool stages, then a
// two-layer classifier. Small enough to train for real in tests and examples.
#include <string>
#include <vector>

#include "burst/graph/builder.h"
#include "zoo/zoo_models.h"

namespace burst::graph::zoo {
namespace {

// 3x3 conv, padding 1, then batchnorm, relu and a 2x2 max pool: [C, s, s] -> [out, s/2, s/2].
std::string stage(GraphBuilder& b, int index, const std::string& x, int64_t out_channels) {
  const std::string n = std::to_string(index);
  std::string y = b.conv2d("conv" + n, x, conv2d_attrs(out_channels, {3, 3}, {1, 1}, {1, 1}));
  y = b.batchnorm2d("bn" + n, y);
  y = b.relu("relu" + n, y);
  return b.maxpool2d("pool" + n, y, maxpool2d_attrs({2, 2}, {2, 2}));
}

Graph build_fmnist_cnn(const ZooOptions& options) {
  const std::string model = "fmnist_cnn";
  const int64_t classes = option_int(options, model, "classes");
  const int64_t channels = option_int(options, model, "channels");

  GraphBuilder b(model);
  std::string x = b.input("input", {1, 28, 28});
  x = stage(b, 1, x, channels);      // [channels, 14, 14]
  x = stage(b, 2, x, 2 * channels);  // [2 * channels, 7, 7]
  x = b.flatten("flatten", x);       // [2 * channels * 49] = [3136] at the default 32
  x = b.linear("fc1", x, 128);
  x = b.relu("relu3", x);
  x = b.dropout("dropout", x, 0.25);
  x = b.linear("fc2", x, classes);
  b.cross_entropy("loss", x);
  return std::move(b).build();
}

}  // namespace

std::vector<ZooEntry> fmnist_cnn_entries() {
  ZooEntry entry;
  entry.name = "fmnist_cnn";
  entry.description = "Small CNN for Fashion-MNIST 1x28x28 (about 420K params)";
  entry.options = {{"classes", "10", "number of output classes"},
                   {"channels", "32", "first conv width (the second is twice this)"}};
  entry.build = build_fmnist_cnn;
  return {entry};
}

}  // namespace burst::graph::zoo
