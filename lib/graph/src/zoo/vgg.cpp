// VGG 11/13/16/19 as torchvision.models.vgg* (no batchnorm). Layer names follow
// torchvision's modules: "features.N" counts conv, relu and maxpool modules in order, and
// "classifier.N" the head's Sequential.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "burst/graph/builder.h"
#include "zoo/zoo_models.h"

namespace burst::graph::zoo {
namespace {

// torchvision's cfgs "A", "B", "D", "E" as five stages of conv widths; each stage ends in
// a 2x2 max pool (depth = conv layers + 3 linear layers).
std::vector<std::vector<int64_t>> vgg_stages(int depth) {
  switch (depth) {
    case 11:
      return {{64}, {128}, {256, 256}, {512, 512}, {512, 512}};
    case 13:
      return {{64, 64}, {128, 128}, {256, 256}, {512, 512}, {512, 512}};
    case 16:
      return {{64, 64}, {128, 128}, {256, 256, 256}, {512, 512, 512}, {512, 512, 512}};
    default:  // 19
      return {
          {64, 64}, {128, 128}, {256, 256, 256, 256}, {512, 512, 512, 512}, {512, 512, 512, 512}};
  }
}

Graph build_vgg(const std::string& name, int depth, const ZooOptions& options) {
  const int64_t image_size = option_int(options, name, "image_size");
  const int64_t classes = option_int(options, name, "classes");

  GraphBuilder b(name);
  std::string x = b.input("input", {3, image_size, image_size});
  int index = 0;  // torchvision's position in `features`
  for (const auto& stage : vgg_stages(depth)) {
    for (const int64_t width : stage) {
      // 3x3, padding 1: spatial size unchanged
      x = b.conv2d(fmt::format("features.{}", index++), x, conv2d_attrs(width, {3, 3}, {1, 1}, {1, 1}));
      x = b.relu(fmt::format("features.{}", index++), x);
    }
    // 2x2 max pool, stride 2: halves the spatial size
    x = b.maxpool2d(fmt::format("features.{}", index++), x, maxpool2d_attrs({2, 2}, {2, 2}));
  }
  // [512, s, s] -> [512, 7, 7] -> [25088], whatever the image size.
  x = b.adaptive_avgpool2d("avgpool", x, {7, 7});
  x = b.flatten("flatten", x);
  x = b.linear("classifier.0", x, 4096);
  x = b.relu("classifier.1", x);
  x = b.dropout("classifier.2", x, 0.5);
  x = b.linear("classifier.3", x, 4096);
  x = b.relu("classifier.4", x);
  x = b.dropout("classifier.5", x, 0.5);
  x = b.linear("classifier.6", x, classes);
  b.cross_entropy("loss", x);
  return std::move(b).build();
}

ZooEntry vgg_entry(int depth) {
  const std::string name = fmt::format("vgg{}", depth);
  ZooEntry entry;
  entry.name = name;
  entry.description = fmt::format("VGG-{} (torchvision, no batchnorm)", depth);
  entry.options = {{"image_size", "224", "input height and width"},
                   {"classes", "1000", "number of output classes"}};
  entry.build = [name, depth](const ZooOptions& options) {
    return build_vgg(name, depth, options);
  };
  return entry;
}

}  // namespace

std::vector<ZooEntry> vgg_entries() {
  return {vgg_entry(11), vgg_entry(13), vgg_entry(16), vgg_entry(19)};
}

}  // namespace burst::graph::zoo
