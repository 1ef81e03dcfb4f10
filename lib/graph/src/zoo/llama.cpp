// The `llama:` zoo spec: a Llama-style decoder (GQA attention with rotary positions, SwiGLU,
// RMSNorm, untied head), with a mixture of experts when experts > 0 (Mixtral-style; shared
// experts as DeepSeek's). The defaults are Llama 3.1 8B at torchtitan's 8,192 tokens.
#include <string>
#include <vector>

#include "burst/graph/decoder.h"
#include "zoo/zoo_models.h"

namespace burst::graph::zoo {

std::vector<ZooEntry> llama_entries() {
  ZooEntry entry;
  entry.name = "llama";
  entry.description = "Llama-style decoder: GQA, SwiGLU, RMSNorm, rotary, untied head; MoE with experts > 0 "
                      "(defaults: Llama 3.1 8B)";
  entry.options = {{"layers", "32", "decoder blocks"},
                   {"width", "4096", "hidden size"},
                   {"heads", "32", "query heads"},
                   {"kv_heads", "8", "key/value heads (divides heads; = heads for MHA)"},
                   {"head_dim", "0", "features per head (0: width / heads)"},
                   {"ffn", "14336", "SwiGLU hidden width of the dense MLPs"},
                   {"vocab", "128256", "vocabulary size"},
                   {"seq", "8192", "tokens per sample"},
                   {"theta", "500000", "rotary base"},
                   {"experts", "0", "routed experts per MoE block (0: dense)"},
                   {"top_k", "2", "experts each token is routed to"},
                   {"expert_ffn", "14336", "SwiGLU hidden width of each expert"},
                   {"shared_experts", "0", "always-on experts of expert_ffn each"},
                   {"capacity", "0", "expert capacity factor (0: dropless)"}};
  entry.build = [](const ZooOptions& options) {
    const std::string model = "llama";
    DecoderConfig c;
    c.layers = option_int(options, model, "layers", kMaxZooBlocks);
    c.width = option_int(options, model, "width");
    c.attention.heads = option_int(options, model, "heads");
    c.attention.kv_heads = option_int(options, model, "kv_heads");
    c.attention.head_dim = option_int(options, model, "head_dim", kMaxZooOptionValue, 0);
    c.ffn = option_int(options, model, "ffn");
    c.vocab = option_int(options, model, "vocab");
    c.seq = option_int(options, model, "seq");
    c.attention.rotary_theta = option_number(options, model, "theta");
    c.moe.experts = option_int(options, model, "experts", kMaxZooOptionValue, 0);
    if (c.moe.experts > 0) {
      c.moe.top_k = option_int(options, model, "top_k");
      c.moe.expert_ffn = option_int(options, model, "expert_ffn");
      c.moe.shared_ffn = option_int(options, model, "shared_experts", kMaxZooOptionValue, 0) * c.moe.expert_ffn;
      c.moe.capacity_factor = option_number(options, model, "capacity");
    }
    return build_decoder(model, c);
  };
  return {entry};
}

}  // namespace burst::graph::zoo
