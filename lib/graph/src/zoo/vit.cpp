// ViT-B/16 as torchvision.models.vit_b_16, with its size as options. Layer names follow
// torchvision's modules ("conv_proj", "encoder.layers.encoder_layer_0.mlp.0", "heads.head");
// the class token and position embedding, parameters in torchvision, are "class_token" and
// "encoder.pos_embedding", and a block's residual sums are "...encoder_layer_0.add_1/2".
#include <string>
#include <vector>

#include <fmt/format.h>

#include "burst/graph/builder.h"
#include "burst/util/error.h"
#include "zoo/zoo_models.h"

namespace burst::graph::zoo {
namespace {

constexpr double kVitLayerNormEps = 1e-6;

// Sizes from the options (defaults: ViT-B/16 at 224 with 1000 classes).
struct VitConfig {
  int64_t image_size = 0;
  int64_t patch = 0;
  int64_t layers = 0;
  int64_t width = 0;  // hidden size D
  int64_t heads = 0;
  int64_t mlp = 0;  // MLP hidden size
  int64_t classes = 0;
};

// One pre-norm encoder block on [T, width]: x + attn(ln_1(x)), then y + mlp(ln_2(y)).
// torchvision's dropouts default to p = 0 (they still appear, for the shape comparison).
std::string encoder_block(GraphBuilder& b, const std::string& p, const std::string& x,
                          const VitConfig& c) {
  std::string y = b.layernorm(p + ".ln_1", x, kVitLayerNormEps);
  y = b.self_attention(p + ".self_attention", y, c.heads);
  y = b.dropout(p + ".dropout", y, 0.0);
  const std::string mid = b.add_(p + ".add_1", {y, x});
  y = b.layernorm(p + ".ln_2", mid, kVitLayerNormEps);
  y = b.linear(p + ".mlp.0", y, c.mlp);  // [T, width] -> [T, mlp]
  y = b.gelu(p + ".mlp.1", y);
  y = b.dropout(p + ".mlp.2", y, 0.0);
  y = b.linear(p + ".mlp.3", y, c.width);  // [T, mlp] -> [T, width]
  y = b.dropout(p + ".mlp.4", y, 0.0);
  return b.add_(p + ".add_2", {y, mid});
}

Graph build_vit(const std::string& model, const VitConfig& c) {
  if (c.image_size % c.patch != 0) {
    throw UserError(fmt::format("model '{}': image_size {} is not divisible by patch {}", model,
                                c.image_size, c.patch));
  }
  if (c.width % c.heads != 0) {
    throw UserError(
        fmt::format("model '{}': width {} is not divisible by heads {}", model, c.width, c.heads));
  }
  const int64_t grid = c.image_size / c.patch;  // 224 / 16 = 14 patches a side
  const int64_t tokens = grid * grid + 1;       // 196 patches + the class token = 197

  GraphBuilder b(model);
  std::string x = b.input("input", {3, c.image_size, c.image_size});
  // Patchify: a patch x patch conv with stride patch -> [width, grid, grid].
  x = b.conv2d("conv_proj", x, conv2d_attrs(c.width, {c.patch, c.patch}, {c.patch, c.patch}));
  x = b.image_to_tokens("image_to_tokens", x);  // [grid * grid, width]
  x = b.class_token("class_token", x);          // [tokens, width]
  x = b.position_embedding("encoder.pos_embedding", x, tokens);
  x = b.dropout("encoder.dropout", x, 0.0);
  for (int64_t i = 0; i < c.layers; ++i) {
    x = encoder_block(b, fmt::format("encoder.layers.encoder_layer_{}", i), x, c);
  }
  x = b.layernorm("encoder.ln", x, kVitLayerNormEps);  // [tokens, width]
  x = b.take_token("take_class_token", x, 0);       // [width]
  x = b.linear("heads.head", x, c.classes);
  b.cross_entropy("loss", x);
  return std::move(b).build();
}

}  // namespace

std::vector<ZooEntry> vit_entries() {
  ZooEntry entry;
  entry.name = "vit_b_16";
  entry.description = "Vision Transformer B/16 (torchvision); size options give other ViTs";
  entry.options = {{"image_size", "224", "input height and width (a multiple of patch)"},
                   {"patch", "16", "patch height and width"},
                   {"layers", "12", "encoder blocks"},
                   {"width", "768", "hidden size"},
                   {"heads", "12", "attention heads (must divide width)"},
                   {"mlp", "3072", "MLP hidden size"},
                   {"classes", "1000", "number of output classes"}};
  entry.build = [](const ZooOptions& options) {
    const std::string model = "vit_b_16";
    VitConfig c;
    c.image_size = option_int(options, model, "image_size");
    c.patch = option_int(options, model, "patch");
    c.layers = option_int(options, model, "layers", kMaxZooBlocks);
    c.width = option_int(options, model, "width");
    c.heads = option_int(options, model, "heads");
    c.mlp = option_int(options, model, "mlp");
    c.classes = option_int(options, model, "classes");
    return build_vit(model, c);
  };
  return {entry};
}

}  // namespace burst::graph::zoo
