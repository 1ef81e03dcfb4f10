// Inception v3 as torchvision 0.14's inception_v3(aux_logits=True). Layer names follow
// torchvision's modules ("Mixed_5b.branch1x1.conv", "AuxLogits.fc"). Each BasicConv2d is
// "X.conv", "X.bn" and the functional relu "X.relu"; functional pools inside a block are
// "Mixed_5b.avg_pool" / "Mixed_6a.max_pool", and a block's output is "Mixed_5b.concat".
#include <string>
#include <vector>

#include <fmt/format.h>

#include "burst/graph/builder.h"
#include "burst/util/error.h"
#include "zoo/zoo_models.h"

namespace burst::graph::zoo {
namespace {

// torchvision's BasicConv2d: conv without bias, batchnorm (eps 0.001), relu.
std::string basic_conv(GraphBuilder& b, const std::string& name, const std::string& x,
                       int64_t out_channels, Pair kernel, Pair stride = {1, 1},
                       Pair padding = {0, 0}) {
  std::string y = b.conv2d(name + ".conv", x, conv2d_attrs(out_channels, kernel, stride, padding, false));
  y = b.batchnorm2d(name + ".bn", y, 0.001);
  return b.relu(name + ".relu", y);
}

// 3x3 average pool, stride 1, padding 1 (count_include_pad): keeps the spatial size.
std::string same_avg_pool(GraphBuilder& b, const std::string& name, const std::string& x) {
  AvgPool2dAttrs attrs;
  attrs.kernel = {3, 3};
  attrs.stride = {1, 1};
  attrs.padding = {1, 1};
  return b.avgpool2d(name, x, attrs);
}

// 3x3 max pool, stride 2: s -> (s - 3) / 2 + 1.
std::string reducing_max_pool(GraphBuilder& b, const std::string& name, const std::string& x) {
  return b.maxpool2d(name, x, maxpool2d_attrs({3, 3}, {2, 2}));
}

// InceptionA at 35x35: 64 + 64 + 96 + pool_features channels out.
std::string inception_a(GraphBuilder& b, const std::string& p, const std::string& x,
                        int64_t pool_features) {
  const std::string b1 = basic_conv(b, p + ".branch1x1", x, 64, {1, 1});
  std::string b5 = basic_conv(b, p + ".branch5x5_1", x, 48, {1, 1});
  b5 = basic_conv(b, p + ".branch5x5_2", b5, 64, {5, 5}, {1, 1}, {2, 2});
  std::string b3 = basic_conv(b, p + ".branch3x3dbl_1", x, 64, {1, 1});
  b3 = basic_conv(b, p + ".branch3x3dbl_2", b3, 96, {3, 3}, {1, 1}, {1, 1});
  b3 = basic_conv(b, p + ".branch3x3dbl_3", b3, 96, {3, 3}, {1, 1}, {1, 1});
  std::string bp = same_avg_pool(b, p + ".avg_pool", x);
  bp = basic_conv(b, p + ".branch_pool", bp, pool_features, {1, 1});
  return b.concat(p + ".concat", {b1, b5, b3, bp});
}

// InceptionB, 35x35 -> 17x17: 384 + 96 + in_channels channels out.
std::string inception_b(GraphBuilder& b, const std::string& p, const std::string& x) {
  const std::string b3 = basic_conv(b, p + ".branch3x3", x, 384, {3, 3}, {2, 2});
  std::string bd = basic_conv(b, p + ".branch3x3dbl_1", x, 64, {1, 1});
  bd = basic_conv(b, p + ".branch3x3dbl_2", bd, 96, {3, 3}, {1, 1}, {1, 1});
  bd = basic_conv(b, p + ".branch3x3dbl_3", bd, 96, {3, 3}, {2, 2});
  const std::string bp = reducing_max_pool(b, p + ".max_pool", x);
  return b.concat(p + ".concat", {b3, bd, bp});
}

// InceptionC at 17x17 with factorized 7x7 convs of width c7: 4 x 192 = 768 channels out.
std::string inception_c(GraphBuilder& b, const std::string& p, const std::string& x, int64_t c7) {
  const Pair row{1, 7}, row_pad{0, 3}, col{7, 1}, col_pad{3, 0};
  const std::string b1 = basic_conv(b, p + ".branch1x1", x, 192, {1, 1});
  std::string b7 = basic_conv(b, p + ".branch7x7_1", x, c7, {1, 1});
  b7 = basic_conv(b, p + ".branch7x7_2", b7, c7, row, {1, 1}, row_pad);
  b7 = basic_conv(b, p + ".branch7x7_3", b7, 192, col, {1, 1}, col_pad);
  std::string bd = basic_conv(b, p + ".branch7x7dbl_1", x, c7, {1, 1});
  bd = basic_conv(b, p + ".branch7x7dbl_2", bd, c7, col, {1, 1}, col_pad);
  bd = basic_conv(b, p + ".branch7x7dbl_3", bd, c7, row, {1, 1}, row_pad);
  bd = basic_conv(b, p + ".branch7x7dbl_4", bd, c7, col, {1, 1}, col_pad);
  bd = basic_conv(b, p + ".branch7x7dbl_5", bd, 192, row, {1, 1}, row_pad);
  std::string bp = same_avg_pool(b, p + ".avg_pool", x);
  bp = basic_conv(b, p + ".branch_pool", bp, 192, {1, 1});
  return b.concat(p + ".concat", {b1, b7, bd, bp});
}

// InceptionD, 17x17 -> 8x8: 320 + 192 + in_channels (768) = 1280 channels out.
std::string inception_d(GraphBuilder& b, const std::string& p, const std::string& x) {
  std::string b3 = basic_conv(b, p + ".branch3x3_1", x, 192, {1, 1});
  b3 = basic_conv(b, p + ".branch3x3_2", b3, 320, {3, 3}, {2, 2});
  std::string b7 = basic_conv(b, p + ".branch7x7x3_1", x, 192, {1, 1});
  b7 = basic_conv(b, p + ".branch7x7x3_2", b7, 192, {1, 7}, {1, 1}, {0, 3});
  b7 = basic_conv(b, p + ".branch7x7x3_3", b7, 192, {7, 1}, {1, 1}, {3, 0});
  b7 = basic_conv(b, p + ".branch7x7x3_4", b7, 192, {3, 3}, {2, 2});
  const std::string bp = reducing_max_pool(b, p + ".max_pool", x);
  return b.concat(p + ".concat", {b3, b7, bp});
}

// InceptionE at 8x8: 320 + 2 x 384 + 2 x 384 + 192 = 2048 channels out. The 3x3 branches
// split into parallel 1x3 and 3x1 convs joined by their own concats.
std::string inception_e(GraphBuilder& b, const std::string& p, const std::string& x) {
  const std::string b1 = basic_conv(b, p + ".branch1x1", x, 320, {1, 1});
  const std::string b3 = basic_conv(b, p + ".branch3x3_1", x, 384, {1, 1});
  const std::string b3a = basic_conv(b, p + ".branch3x3_2a", b3, 384, {1, 3}, {1, 1}, {0, 1});
  const std::string b3b = basic_conv(b, p + ".branch3x3_2b", b3, 384, {3, 1}, {1, 1}, {1, 0});
  const std::string b3_out = b.concat(p + ".branch3x3_concat", {b3a, b3b});
  std::string bd = basic_conv(b, p + ".branch3x3dbl_1", x, 448, {1, 1});
  bd = basic_conv(b, p + ".branch3x3dbl_2", bd, 384, {3, 3}, {1, 1}, {1, 1});
  const std::string bda = basic_conv(b, p + ".branch3x3dbl_3a", bd, 384, {1, 3}, {1, 1}, {0, 1});
  const std::string bdb = basic_conv(b, p + ".branch3x3dbl_3b", bd, 384, {3, 1}, {1, 1}, {1, 0});
  const std::string bd_out = b.concat(p + ".branch3x3dbl_concat", {bda, bdb});
  std::string bp = same_avg_pool(b, p + ".avg_pool", x);
  bp = basic_conv(b, p + ".branch_pool", bp, 192, {1, 1});
  return b.concat(p + ".concat", {b1, b3_out, bd_out, bp});
}

// InceptionAux on Mixed_6e's [768, 17, 17]: 5x5/3 avg pool -> [768, 5, 5], 1x1 conv ->
// [128, 5, 5], 5x5 conv -> [768, 1, 1], pool, flatten, fc; its loss counts 0.4.
void aux_logits(GraphBuilder& b, const std::string& x, int64_t classes) {
  AvgPool2dAttrs pool;
  pool.kernel = {5, 5};
  pool.stride = {3, 3};
  std::string y = b.avgpool2d("AuxLogits.avg_pool", x, pool);
  y = basic_conv(b, "AuxLogits.conv0", y, 128, {1, 1});
  y = basic_conv(b, "AuxLogits.conv1", y, 768, {5, 5});
  y = b.adaptive_avgpool2d("AuxLogits.adaptive_avg_pool", y, {1, 1});
  y = b.flatten("AuxLogits.flatten", y);
  y = b.linear("AuxLogits.fc", y, classes);
  b.cross_entropy("AuxLogits.loss", y, 0.4);
}

Graph build_inception_v3(const ZooOptions& options) {
  const std::string model = "inception_v3";
  const int64_t image_size = option_int(options, model, "image_size");
  const int64_t classes = option_int(options, model, "classes");
  const bool aux = option_bool(options, model, "aux_logits");
  // Spatial sizes for S = 299: 149, 147, 73, 71, 35 (Mixed_5*), 17 (Mixed_6*), 8 (Mixed_7*).
  // The aux head's 5x5/3 pool then 5x5 conv need Mixed_6e >= 17, i.e. S >= 299; without it
  // Mixed_7a's stride-2 3x3 convs need Mixed_6e >= 3, i.e. S >= 75 (torchvision's minimum).
  const int64_t minimum = aux ? 299 : 75;
  if (image_size < minimum) {
    throw UserError(fmt::format(
        "model '{}': image_size {} is below {}, the smallest that{}", model, image_size, minimum,
        aux ? " the aux classifier accepts (or set aux_logits=false)" : " Inception v3 accepts"));
  }

  GraphBuilder b(model);
  std::string x = b.input("input", {3, image_size, image_size});
  x = basic_conv(b, "Conv2d_1a_3x3", x, 32, {3, 3}, {2, 2});
  x = basic_conv(b, "Conv2d_2a_3x3", x, 32, {3, 3});
  x = basic_conv(b, "Conv2d_2b_3x3", x, 64, {3, 3}, {1, 1}, {1, 1});
  x = reducing_max_pool(b, "maxpool1", x);
  x = basic_conv(b, "Conv2d_3b_1x1", x, 80, {1, 1});
  x = basic_conv(b, "Conv2d_4a_3x3", x, 192, {3, 3});
  x = reducing_max_pool(b, "maxpool2", x);
  x = inception_a(b, "Mixed_5b", x, 32);  // 192 -> 256 channels
  x = inception_a(b, "Mixed_5c", x, 64);  // 256 -> 288
  x = inception_a(b, "Mixed_5d", x, 64);  // 288 -> 288
  x = inception_b(b, "Mixed_6a", x);      // 288 -> 768
  x = inception_c(b, "Mixed_6b", x, 128);
  x = inception_c(b, "Mixed_6c", x, 160);
  x = inception_c(b, "Mixed_6d", x, 160);
  x = inception_c(b, "Mixed_6e", x, 192);
  if (aux) aux_logits(b, x, classes);
  x = inception_d(b, "Mixed_7a", x);  // 768 -> 1280
  x = inception_e(b, "Mixed_7b", x);  // 1280 -> 2048
  x = inception_e(b, "Mixed_7c", x);  // 2048 -> 2048
  // [2048, s, s] -> [2048, 1, 1] -> dropout -> [2048] -> [classes]
  x = b.adaptive_avgpool2d("avgpool", x, {1, 1});
  x = b.dropout("dropout", x, 0.5);
  x = b.flatten("flatten", x);
  x = b.linear("fc", x, classes);
  b.cross_entropy("loss", x);
  return std::move(b).build();
}

}  // namespace

std::vector<ZooEntry> inception_entries() {
  ZooEntry entry;
  entry.name = "inception_v3";
  entry.description = "Inception v3 with the auxiliary classifier (torchvision)";
  entry.options = {{"image_size", "299", "input height and width"},
                   {"classes", "1000", "number of output classes"},
                   {"aux_logits", "true", "include the auxiliary classifier and its 0.4 loss"}};
  entry.build = build_inception_v3;
  return {entry};
}

}  // namespace burst::graph::zoo
