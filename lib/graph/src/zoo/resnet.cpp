// ResNet as torchvision.models.resnet* (v1.5: a bottleneck's stride sits on its 3x3 conv).
// Layer names follow torchvision's modules ("layer1.0.conv1", "layer1.0.downsample.0");
// torchvision reuses one "relu" module per block, so ours are numbered by use: "relu1"..
// "relu3" in a bottleneck, "relu1", "relu2" in a basic block (the last after the residual
// add), and the residual sum is "layerL.B.add".
#include <string>
#include <vector>

#include <fmt/format.h>

#include "burst/graph/builder.h"
#include "burst/util/error.h"
#include "zoo/zoo_models.h"

namespace burst::graph::zoo {
namespace {

// Convs in ResNet have no bias: the batchnorm after each supplies it.
Conv2dAttrs conv(int64_t out_channels, int64_t kernel, int64_t stride, int64_t padding) {
  return conv2d_attrs(out_channels, {kernel, kernel}, {stride, stride}, {padding, padding}, false);
}

struct ResNetConfig {
  bool bottleneck = true;        // Bottleneck (expansion 4) or BasicBlock (expansion 1)
  std::vector<int> blocks;       // blocks per stage, layer1..layer4
  int64_t width_per_group = 64;  // bottleneck inner width = planes * width_per_group / 64
};

// The block's input `x` has `in_channels`; returns the block's output name. A projection
// shortcut (1x1 conv + bn, "downsample") is used when the stride or channel count changes.
std::string block(GraphBuilder& b, const std::string& prefix, const std::string& x,
                  int64_t in_channels, int64_t planes, int64_t stride, const ResNetConfig& config) {
  const int64_t expansion = config.bottleneck ? 4 : 1;
  const int64_t out_channels = planes * expansion;
  std::string y;
  if (config.bottleneck) {
    // 1x1 reduce to `width`, 3x3 (strided) at `width`, 1x1 expand to planes * 4.
    const int64_t width = planes * config.width_per_group / 64;
    y = b.conv2d(prefix + ".conv1", x, conv(width, 1, 1, 0));
    y = b.batchnorm2d(prefix + ".bn1", y);
    y = b.relu(prefix + ".relu1", y);
    y = b.conv2d(prefix + ".conv2", y, conv(width, 3, stride, 1));
    y = b.batchnorm2d(prefix + ".bn2", y);
    y = b.relu(prefix + ".relu2", y);
    y = b.conv2d(prefix + ".conv3", y, conv(out_channels, 1, 1, 0));
    y = b.batchnorm2d(prefix + ".bn3", y);
  } else {
    // Two 3x3 convs at `planes`, the first strided.
    y = b.conv2d(prefix + ".conv1", x, conv(planes, 3, stride, 1));
    y = b.batchnorm2d(prefix + ".bn1", y);
    y = b.relu(prefix + ".relu1", y);
    y = b.conv2d(prefix + ".conv2", y, conv(planes, 3, 1, 1));
    y = b.batchnorm2d(prefix + ".bn2", y);
  }
  std::string shortcut = x;
  if (stride != 1 || in_channels != out_channels) {
    shortcut = b.conv2d(prefix + ".downsample.0", x, conv(out_channels, 1, stride, 0));
    shortcut = b.batchnorm2d(prefix + ".downsample.1", shortcut);
  }
  y = b.add_(prefix + ".add", {y, shortcut});
  // The relu after the add is the block's third (bottleneck) or second (basic) use of
  // torchvision's shared "relu" module.
  return b.relu(prefix + (config.bottleneck ? ".relu3" : ".relu2"), y);
}

Graph build_resnet(const std::string& name, const ResNetConfig& config, const ZooOptions& options) {
  const int64_t image_size = option_int(options, name, "image_size");
  const int64_t classes = option_int(options, name, "classes");

  GraphBuilder b(name);
  // Stem: [3, S, S] -> 7x7/2 conv -> [64, S/2, S/2] -> 3x3/2 max pool -> [64, S/4, S/4].
  std::string x = b.input("input", {3, image_size, image_size});
  x = b.conv2d("conv1", x, conv(64, 7, 2, 3));
  x = b.batchnorm2d("bn1", x);
  x = b.relu("relu", x);
  x = b.maxpool2d("maxpool", x, maxpool2d_attrs({3, 3}, {2, 2}, {1, 1}));

  // Stages at planes 64, 128, 256, 512; all but the first halve the spatial size.
  int64_t channels = 64;
  for (size_t stage = 0; stage < config.blocks.size(); ++stage) {
    const int64_t planes = int64_t{64} << stage;
    for (int i = 0; i < config.blocks[stage]; ++i) {
      const int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      x = block(b, fmt::format("layer{}.{}", stage + 1, i), x, channels, planes, stride, config);
      channels = planes * (config.bottleneck ? 4 : 1);
    }
  }
  // [C, s, s] -> [C, 1, 1] -> [C] -> [classes]
  x = b.adaptive_avgpool2d("avgpool", x, {1, 1});
  x = b.flatten("flatten", x);
  x = b.linear("fc", x, classes);
  b.cross_entropy("loss", x);
  return std::move(b).build();
}

// torchvision's depths: 18 and 34 use BasicBlock, the rest Bottleneck.
ResNetConfig config_for_depth(const std::string& model, int64_t depth, int64_t width_per_group) {
  ResNetConfig config;
  config.width_per_group = width_per_group;
  switch (depth) {
    case 18:
      config.bottleneck = false;
      config.blocks = {2, 2, 2, 2};
      break;
    case 34:
      config.bottleneck = false;
      config.blocks = {3, 4, 6, 3};
      break;
    case 50:
      config.blocks = {3, 4, 6, 3};
      break;
    case 101:
      config.blocks = {3, 4, 23, 3};
      break;
    case 152:
      config.blocks = {3, 8, 36, 3};
      break;
    default:
      throw UserError(
          fmt::format("model '{}': depth {} is not one of 18, 34, 50, 101, 152", model, depth));
  }
  if (!config.bottleneck && width_per_group != 64) {
    // torchvision's BasicBlock only supports base width 64.
    throw UserError(
        fmt::format("model '{}': width_per_group {} needs a bottleneck depth "
                    "(50, 101, 152); depth {} supports only 64",
                    model, width_per_group, depth));
  }
  return config;
}

std::vector<ZooOption> common_options() {
  return {{"image_size", "224", "input height and width"},
          {"classes", "1000", "number of output classes"}};
}

// A fixed torchvision variant: resnet50, wide_resnet50_2, ...
ZooEntry fixed_entry(std::string name, std::string description, int64_t depth,
                     int64_t width_per_group) {
  ZooEntry entry;
  entry.name = name;
  entry.description = std::move(description);
  entry.options = common_options();
  entry.build = [name, depth, width_per_group](const ZooOptions& options) {
    return build_resnet(name, config_for_depth(name, depth, width_per_group), options);
  };
  return entry;
}

ZooEntry generic_entry() {
  ZooEntry entry;
  entry.name = "resnet";
  entry.description = "ResNet of any torchvision depth and bottleneck width";
  entry.options = common_options();
  entry.options.push_back({"depth", "50", "18, 34, 50, 101 or 152"});
  entry.options.push_back(
      {"width_per_group", "64", "bottleneck base width (128 = wide_resnet*_2)"});
  entry.build = [](const ZooOptions& options) {
    const int64_t depth = option_int(options, "resnet", "depth");
    const int64_t width = option_int(options, "resnet", "width_per_group");
    return build_resnet("resnet", config_for_depth("resnet", depth, width), options);
  };
  return entry;
}

}  // namespace

std::vector<ZooEntry> resnet_entries() {
  return {fixed_entry("resnet50", "ResNet-50 v1.5 (torchvision)", 50, 64),
          fixed_entry("wide_resnet50_2", "Wide ResNet-50-2 (torchvision)", 50, 128),
          fixed_entry("wide_resnet101_2", "Wide ResNet-101-2 (torchvision)", 101, 128),
          generic_entry()};
}

}  // namespace burst::graph::zoo
