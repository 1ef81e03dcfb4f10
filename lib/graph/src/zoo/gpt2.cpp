// GPT-2 decoder (Hugging Face GPT2LMHeadModel) with its size as options; the defaults are
// gpt2-small. Layer names follow Hugging Face's modules ("transformer.h.0.attn",
// "transformer.h.0.mlp.c_fc", "lm_head"); a block's residual sums are "...h.0.add_1/2".
// The LM head shares the token embedding's weight, so its parameters count once.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "burst/graph/builder.h"
#include "burst/util/error.h"
#include "zoo/zoo_models.h"

namespace burst::graph::zoo {
namespace {

constexpr double kDropout = 0.1;  // GPT-2's embd_pdrop = attn_pdrop = resid_pdrop
constexpr double kGpt2LayerNormEps = 1e-5;

// Sizes from the options.
struct Gpt2Config {
  int64_t layers = 0;
  int64_t width = 0;  // hidden size D (n_embd)
  int64_t heads = 0;
  int64_t seq = 0;  // tokens per sample T
  int64_t vocab = 0;
  int64_t positions = 0;  // n_positions: the position table's rows
};

// One pre-norm block on [T, D]: x + attn(ln_1(x)), then y + mlp(ln_2(y)), the MLP
// D -> 4D -> D with tanh-approximated GELU.
std::string block(GraphBuilder& b, const std::string& p, const std::string& x,
                  const Gpt2Config& c) {
  std::string y = b.layernorm(p + ".ln_1", x, kGpt2LayerNormEps);
  y = b.self_attention(p + ".attn", y, c.heads, /*causal=*/true, kDropout);
  y = b.dropout(p + ".attn.resid_dropout", y, kDropout);
  const std::string mid = b.add_(p + ".add_1", {y, x});
  y = b.layernorm(p + ".ln_2", mid, kGpt2LayerNormEps);
  y = b.linear(p + ".mlp.c_fc", y, 4 * c.width);
  y = b.gelu(p + ".mlp.act", y, "tanh");
  y = b.linear(p + ".mlp.c_proj", y, c.width);
  y = b.dropout(p + ".mlp.dropout", y, kDropout);
  return b.add_(p + ".add_2", {y, mid});
}

Graph build_gpt2(const std::string& model, const Gpt2Config& c) {
  if (c.width % c.heads != 0) {
    throw UserError(
        fmt::format("model '{}': width {} is not divisible by heads {}", model, c.width, c.heads));
  }
  if (c.seq > c.positions) {
    throw UserError(
        fmt::format("model '{}': seq {} exceeds positions {}", model, c.seq, c.positions));
  }

  GraphBuilder b(model);
  std::string x = b.token_input("input_ids", c.seq, c.vocab);   // [T] int64 ids
  x = b.embedding("transformer.wte", x, c.vocab, c.width);      // [T, D]
  x = b.position_embedding("transformer.wpe", x, c.positions);  // + positions 0..T-1
  x = b.dropout("transformer.drop", x, kDropout);
  for (int64_t i = 0; i < c.layers; ++i) {
    x = block(b, fmt::format("transformer.h.{}", i), x, c);
  }
  x = b.layernorm("transformer.ln_f", x, kGpt2LayerNormEps);
  // [T, D] -> [T, vocab] logits through the transposed token embedding.
  x = b.linear("lm_head", x, c.vocab, /*bias=*/false, /*tied_to=*/"transformer.wte");
  b.cross_entropy("loss", x);
  return std::move(b).build();
}

}  // namespace

std::vector<ZooEntry> gpt2_entries() {
  ZooEntry entry;
  entry.name = "gpt2";
  entry.description = "GPT-2 decoder with tied LM head (defaults: gpt2-small, 124M)";
  entry.options = {{"layers", "12", "decoder blocks (gpt2-medium: 24)"},
                   {"width", "768", "hidden size (gpt2-medium: 1024)"},
                   {"heads", "12", "attention heads (must divide width; gpt2-medium: 16)"},
                   {"seq", "1024", "tokens per sample (at most positions)"},
                   {"vocab", "50257", "vocabulary size"},
                   {"positions", "1024", "rows of the learned position table"}};
  entry.build = [](const ZooOptions& options) {
    const std::string model = "gpt2";
    Gpt2Config c;
    c.layers = option_int(options, model, "layers", kMaxZooBlocks);
    c.width = option_int(options, model, "width");
    c.heads = option_int(options, model, "heads");
    c.seq = option_int(options, model, "seq");
    c.vocab = option_int(options, model, "vocab");
    c.positions = option_int(options, model, "positions");
    return build_gpt2(model, c);
  };
  return {entry};
}

}  // namespace burst::graph::zoo
