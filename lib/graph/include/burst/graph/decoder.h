#pragma once
// Today's decoder-only language models (docs/llm.md): Llama, Mistral, Qwen2/3, Mixtral,
// Qwen-MoE, DeepSeek-V3 and GPT-NeoX, built from one description of their sizes. The zoo's
// `llama:` spec and the Hugging Face config reader (hf_config.h) both fill a DecoderConfig.
#include <cstdint>
#include <string>

#include "burst/graph/graph.h"

namespace burst::graph {

// Every block's attention as a decoder has it: causal, a flash core, no biases, rotary at
// Llama 3's base (the fields a config or spec sets are changed from here).
SelfAttentionAttrs decoder_attention();

struct DecoderConfig {
  std::string family = "llama";  // layer names: "llama" (model.layers.i...) or "gpt_neox"
  int64_t layers = 0;
  int64_t width = 0;  // hidden size D
  int64_t ffn = 0;    // the dense MLP's hidden width
  int64_t vocab = 0;
  int64_t seq = 0;  // tokens per sample
  double norm_eps = 1e-5;
  bool rms_norm = true;            // RMSNorm; false: LayerNorm with bias
  bool swiglu = true;              // SwiGLU MLP (gate, up, down, no bias); false: GELU MLP with bias
  bool tied_head = false;          // the LM head shares the token embedding
  bool parallel_residual = false;  // GPT-NeoX: x + attn(ln1(x)) + mlp(ln2(x))
  SelfAttentionAttrs attention = decoder_attention();  // heads, kv_heads, head_dim, rotary, latent ranks, ...
  // The MoE blocks' layer; experts 0: every MLP dense.
  MoeAttrs moe;
  int64_t dense_layers = 0;  // the first blocks keep a dense MLP (DeepSeek's first_k_dense_replace)
  int64_t moe_every = 1;     // every n-th block is MoE (Qwen2-MoE's decoder_sparse_step)
};

// The graph: token ids [seq] -> embedding -> blocks -> final norm -> LM head -> cross-entropy,
// with flash attention (causal). UserError naming the model for sizes that do not fit
// together (heads not dividing the width, kv_heads not dividing heads, ...).
Graph build_decoder(const std::string& model, const DecoderConfig& config);

// Whether block `index` has a mixture of experts.
bool decoder_block_is_moe(const DecoderConfig& config, int64_t index);

}  // namespace burst::graph
