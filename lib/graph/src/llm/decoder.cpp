// Decoder-only language models from a DecoderConfig (decoder.h). Layer names follow Hugging
// Face's modules: LlamaForCausalLM's "model.embed_tokens", "model.layers.0.self_attn",
// "model.layers.0.mlp.gate_proj", "model.norm", "lm_head" (Mixtral's MoE block is
// "block_sparse_moe"), GPTNeoXForCausalLM's "gpt_neox.layers.0.attention", "embed_out".
#include "burst/graph/decoder.h"

#include <fmt/format.h>

#include "burst/graph/builder.h"
#include "burst/util/error.h"

namespace burst::graph {
namespace {

// Module names of one family.
struct Names {
  std::string embedding, block_prefix, attention, attention_norm, mlp_norm, mlp, final_norm, head;
};

Names names_of(const DecoderConfig& c) {
  if (c.family == "gpt_neox") {
    return {"gpt_neox.embed_in", "gpt_neox.layers", "attention", "input_layernorm", "post_attention_layernorm",
            "mlp", "gpt_neox.final_layer_norm", "embed_out"};
  }
  return {"model.embed_tokens", "model.layers", "self_attn", "input_layernorm", "post_attention_layernorm",
          "mlp", "model.norm", "lm_head"};
}

std::string norm(GraphBuilder& b, const std::string& name, const std::string& in, const DecoderConfig& c) {
  return b.add(name, {in}, LayerNormAttrs{c.norm_eps, c.rms_norm});
}


// A dense MLP on [T, D]: SwiGLU down(silu(gate(x)) * up(x)), or GELU fc_out(gelu(fc_in(x))).
std::string dense_mlp(GraphBuilder& b, const std::string& p, const std::string& x, const DecoderConfig& c) {
  if (!c.swiglu) {
    std::string y = b.linear(p + ".dense_h_to_4h", x, c.ffn);
    y = b.gelu(p + ".act", y);
    return b.linear(p + ".dense_4h_to_h", y, c.width);
  }
  const std::string gate = b.add(p + ".act_fn", {b.linear(p + ".gate_proj", x, c.ffn, /*bias=*/false)}, SiluAttrs{});
  const std::string up = b.linear(p + ".up_proj", x, c.ffn, /*bias=*/false);
  const std::string product = b.add(p + ".mul", {gate, up}, MulAttrs{});
  return b.linear(p + ".down_proj", product, c.width, /*bias=*/false);
}

std::string mlp(GraphBuilder& b, const std::string& block, const std::string& x, const DecoderConfig& c,
                int64_t index) {
  if (!decoder_block_is_moe(c, index)) return dense_mlp(b, block + ".mlp", x, c);
  const std::string name = block + (c.moe.shared_ffn == 0 && c.family == "mixtral" ? ".block_sparse_moe" : ".mlp");
  return b.add(name, {x}, c.moe);
}

std::string block(GraphBuilder& b, const Names& n, const DecoderConfig& c, const std::string& x, int64_t index) {
  const std::string p = fmt::format("{}.{}", n.block_prefix, index);
  const std::string attention =
      b.add(p + "." + n.attention, {norm(b, p + "." + n.attention_norm, x, c)}, c.attention);
  if (c.parallel_residual) {
    const std::string mlp_out = mlp(b, p, norm(b, p + "." + n.mlp_norm, x, c), c, index);
    return b.add_(p + ".add", {x, attention, mlp_out});
  }
  const std::string mid = b.add_(p + ".add_1", {x, attention});
  const std::string mlp_out = mlp(b, p, norm(b, p + "." + n.mlp_norm, mid, c), c, index);
  return b.add_(p + ".add_2", {mid, mlp_out});
}

void check_sizes(const std::string& model, const DecoderConfig& c) {
  for (const auto& [value, key] : {std::pair{c.layers, "layers"}, {c.width, "width"}, {c.attention.heads, "heads"},
                                   {c.vocab, "vocab"}, {c.seq, "seq"}}) {
    if (value <= 0) throw UserError(fmt::format("model '{}': {} must be positive, got {}", model, key, value));
  }
  const bool any_dense = c.moe.experts == 0 || c.dense_layers > 0 || c.moe_every > 1;
  if (any_dense && c.ffn <= 0) throw UserError(fmt::format("model '{}': ffn must be positive, got {}", model, c.ffn));
  if (c.moe.experts > 0 && (c.moe.top_k <= 0 || c.moe.expert_ffn <= 0)) {
    throw UserError(fmt::format("model '{}': {} experts need top_k and expert_ffn (got {} and {})", model,
                                c.moe.experts, c.moe.top_k, c.moe.expert_ffn));
  }
  if (c.moe_every <= 0) throw UserError(fmt::format("model '{}': moe_every must be positive, got {}", model, c.moe_every));
}

}  // namespace

SelfAttentionAttrs decoder_attention() {
  SelfAttentionAttrs a;
  a.causal = true;
  a.flash = true;
  a.qkv_bias = false;
  a.out_bias = false;
  a.rotary_theta = 500000;
  return a;
}

bool decoder_block_is_moe(const DecoderConfig& c, int64_t index) {
  return c.moe.experts > 0 && index >= c.dense_layers && (index + 1) % c.moe_every == 0;
}

Graph build_decoder(const std::string& model, const DecoderConfig& c) {
  check_sizes(model, c);
  const Names n = names_of(c);
  GraphBuilder b(model);
  std::string x = b.token_input("input_ids", c.seq, c.vocab);  // [T] int64 ids
  x = b.embedding(n.embedding, x, c.vocab, c.width);            // [T, D]
  for (int64_t i = 0; i < c.layers; ++i) x = block(b, n, c, x, i);
  x = norm(b, n.final_norm, x, c);
  // [T, D] -> [T, vocab] logits; an untied head has its own vocab x D weight.
  x = b.linear(n.head, x, c.vocab, /*bias=*/false, c.tied_head ? n.embedding : "");
  b.cross_entropy("loss", x);
  try {
    return std::move(b).build();
  } catch (const UserError& error) {
    throw UserError(fmt::format("model '{}': {}", model, error.what()));
  }
}

}  // namespace burst::graph
