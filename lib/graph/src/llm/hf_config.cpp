// Hugging Face config.json -> DecoderConfig, one reader per family of model_types. Field
// names are transformers' (LlamaConfig, Qwen3MoeConfig, DeepseekV3Config, GPTNeoXConfig...);
// a JSON null counts as absent, as transformers reads it.
#include "burst/graph/hf_config.h"

#include <algorithm>

#include <fmt/format.h>

#include "burst/graph/zoo.h"
#include "burst/util/error.h"
#include "burst/util/json_io.h"

namespace burst::graph {
namespace {

constexpr const char* kSpecPrefix = "hf:";
constexpr const char* kSeqSuffix = ":seq=";

// One config's fields, read with the file and model_type in every error.
class ConfigFields {
 public:
  ConfigFields(const nlohmann::json& config, std::string where) : config_(config), where_(std::move(where)) {}

  int64_t count(const char* key) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) throw UserError(fmt::format("{}: missing field '{}'", where_, key));
    return as_count(key, *value);
  }
  int64_t count(const char* key, int64_t fallback) const {
    const nlohmann::json* value = find(key);
    return value == nullptr ? fallback : as_count(key, *value);
  }
  double number(const char* key, double fallback) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return fallback;
    if (!value->is_number() || !(value->get<double>() >= 0)) {
      throw UserError(fmt::format("{}: field '{}' must be a number of 0 or more, got {}", where_, key, json_excerpt(*value)));
    }
    return value->get<double>();
  }
  bool flag(const char* key, bool fallback) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return fallback;
    if (!value->is_boolean()) throw UserError(fmt::format("{}: field '{}' must be true or false, got {}", where_, key, json_excerpt(*value)));
    return value->get<bool>();
  }
  std::string text(const char* key, const std::string& fallback) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return fallback;
    if (!value->is_string()) throw UserError(fmt::format("{}: field '{}' must be a string, got {}", where_, key, json_excerpt(*value)));
    return value->get<std::string>();
  }
  // A list of layer indices (Qwen-MoE's mlp_only_layers), checked empty: burst reads
  // the regular patterns (dense_layers, moe_every) only.
  void require_empty_list(const char* key) const {
    const nlohmann::json* value = find(key);
    if (value != nullptr && !(value->is_array() && value->empty())) {
      throw UserError(fmt::format("{}: field '{}' lists dense layers by index; burst reads only an empty list there",
                                  where_, key));
    }
  }
  const std::string& where() const { return where_; }

 private:
  const nlohmann::json* find(const char* key) const {
    const auto found = config_.find(key);
    return found == config_.end() || found->is_null() ? nullptr : &*found;
  }
  int64_t as_count(const char* key, const nlohmann::json& value) const {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > (int64_t{1} << 40)) {
      throw UserError(fmt::format("{}: field '{}' must be a whole number, got {}", where_, key, json_excerpt(value)));
    }
    return value.get<int64_t>();
  }

  const nlohmann::json& config_;
  std::string where_;
};

// The fields every Llama-like config has (LlamaConfig's names).
DecoderConfig llama_like(const ConfigFields& f) {
  DecoderConfig c;
  c.layers = f.count("num_hidden_layers");
  c.width = f.count("hidden_size");
  c.attention.heads = f.count("num_attention_heads");
  c.attention.kv_heads = f.count("num_key_value_heads", c.attention.heads);
  c.attention.head_dim = f.count("head_dim", 0);
  c.ffn = f.count("intermediate_size");
  c.vocab = f.count("vocab_size");
  c.norm_eps = f.number("rms_norm_eps", 1e-6);
  c.attention.rotary_theta = f.number("rope_theta", 10000);
  c.tied_head = f.flag("tie_word_embeddings", false);
  c.attention.qkv_bias = f.flag("attention_bias", false);
  c.attention.out_bias = c.attention.qkv_bias;
  if (f.flag("mlp_bias", false)) throw UserError(fmt::format("{}: mlp_bias true is not read (SwiGLU MLPs without bias only)", f.where()));
  return c;
}

void read_qwen_moe(const ConfigFields& f, DecoderConfig& c, bool shared_expert) {
  c.moe.experts = f.count("num_experts");
  c.moe.top_k = f.count("num_experts_per_tok");
  c.moe.expert_ffn = f.count("moe_intermediate_size");
  c.moe_every = f.count("decoder_sparse_step", 1);
  f.require_empty_list("mlp_only_layers");
  if (shared_expert) {
    c.moe.shared_ffn = f.count("shared_expert_intermediate_size");
    c.moe.shared_gate = c.moe.shared_ffn > 0;
  }
}

void read_deepseek(const ConfigFields& f, DecoderConfig& c) {
  c.attention.kv_heads = 0;  // multi-head latent attention: one key/value head per query head
  c.attention.q_lora_rank = f.count("q_lora_rank", 0);
  c.attention.kv_lora_rank = f.count("kv_lora_rank");
  c.attention.rope_head_dim = f.count("qk_rope_head_dim");
  c.attention.head_dim = f.count("qk_nope_head_dim") + c.attention.rope_head_dim;
  c.attention.v_head_dim = f.count("v_head_dim");
  c.moe.experts = f.count("n_routed_experts");
  c.moe.top_k = f.count("num_experts_per_tok");
  c.moe.expert_ffn = f.count("moe_intermediate_size");
  c.moe.shared_ffn = f.count("n_shared_experts", 0) * c.moe.expert_ffn;
  c.dense_layers = f.count("first_k_dense_replace", 0);
  c.moe_every = f.count("moe_layer_freq", 1);
}

DecoderConfig gpt_neox(const ConfigFields& f) {
  DecoderConfig c;
  c.family = "gpt_neox";
  c.layers = f.count("num_hidden_layers");
  c.width = f.count("hidden_size");
  c.attention.heads = f.count("num_attention_heads");
  c.ffn = f.count("intermediate_size");
  c.vocab = f.count("vocab_size");
  c.norm_eps = f.number("layer_norm_eps", 1e-5);
  c.rms_norm = false;
  c.swiglu = false;
  c.attention.qkv_bias = c.attention.out_bias = f.flag("attention_bias", true);
  c.attention.rotary_theta = f.number("rotary_emb_base", 10000);
  const int64_t head_dim = c.attention.heads > 0 ? c.width / c.attention.heads : 0;
  c.attention.rotary_dims = static_cast<int64_t>(f.number("rotary_pct", 0.25) * static_cast<double>(head_dim)) / 2 * 2;
  c.parallel_residual = f.flag("use_parallel_residual", true);
  c.tied_head = f.flag("tie_word_embeddings", false);
  return c;
}

DecoderConfig read_family(const ConfigFields& f, const std::string& type) {
  if (type == "gpt_neox") return gpt_neox(f);
  DecoderConfig c = llama_like(f);
  if (type == "qwen2" || type == "qwen2_moe") {  // Qwen2Attention: biased Q/K/V, an unbiased output
    c.attention.qkv_bias = true;
    c.attention.out_bias = false;
  }
  if (type == "qwen3" || type == "qwen3_moe") c.attention.qk_norm = true;
  if (type == "mixtral") {
    c.family = "mixtral";
    c.moe.experts = f.count("num_local_experts");
    c.moe.top_k = f.count("num_experts_per_tok");
    c.moe.expert_ffn = c.ffn;
  }
  if (type == "qwen2_moe") read_qwen_moe(f, c, /*shared_expert=*/true);
  if (type == "qwen3_moe") read_qwen_moe(f, c, /*shared_expert=*/false);
  if (type == "deepseek_v3") read_deepseek(f, c);
  return c;
}

// "hf:PATH[:seq=N]" -> PATH and N.
std::pair<std::string, std::optional<int64_t>> split_spec(const std::string& spec) {
  std::string path = spec.substr(std::string(kSpecPrefix).size());
  const auto suffix = path.rfind(kSeqSuffix);
  if (suffix == std::string::npos) return {path, std::nullopt};
  const std::string digits = path.substr(suffix + std::string(kSeqSuffix).size());
  const bool whole = !digits.empty() && digits.size() <= 9 && std::all_of(digits.begin(), digits.end(), ::isdigit);
  if (!whole || std::stoll(digits) < 1) {
    throw UserError(fmt::format("model spec '{}': seq={} is not a positive whole number", text_excerpt(spec),
                                text_excerpt(digits)));
  }
  return {path.substr(0, suffix), std::stoll(digits)};
}

// gpt2 configs through the zoo's GPT-2 (a 4x GELU MLP, learned positions, tied head).
Graph build_gpt2_from_hf(const ConfigFields& f, std::optional<int64_t> seq) {
  const int64_t width = f.count("n_embd");
  if (f.count("n_inner", 4 * width) != 4 * width) {
    throw UserError(fmt::format("{}: n_inner {} is not 4 x n_embd; burst's gpt2 has the 4x MLP", f.where(),
                                f.count("n_inner")));
  }
  const int64_t positions = f.count("n_positions");
  return build_zoo_model(fmt::format("gpt2:layers={},width={},heads={},vocab={},positions={},seq={}",
                                     f.count("n_layer"), width, f.count("n_head"), f.count("vocab_size"), positions,
                                     seq.value_or(std::min(positions, kDefaultHfSequence))));
}

}  // namespace

const std::vector<std::string>& hf_model_types() {
  static const std::vector<std::string> types = {"llama",     "mistral",   "qwen2",       "qwen3", "mixtral",
                                                 "qwen2_moe", "qwen3_moe", "deepseek_v3", "gpt2",  "gpt_neox"};
  return types;
}

DecoderConfig decoder_config_from_hf(const nlohmann::json& config, const std::string& where,
                                     std::optional<int64_t> seq) {
  if (!config.is_object()) throw UserError(fmt::format("{}: a config.json holds one JSON object", where));
  const ConfigFields plain(config, where);
  const std::string type = plain.text("model_type", "");
  const auto& known = hf_model_types();
  if (type == "gpt2") throw UserError(fmt::format("{}: a gpt2 config builds the zoo's gpt2 (build_hf_model)", where));
  if (type.empty() || std::find(known.begin(), known.end(), type) == known.end()) {
    std::string list;
    for (const auto& name : known) list += (list.empty() ? "" : ", ") + name;
    throw UserError(fmt::format("{}: {} (burst reads model_type {})", where,
                                type.empty() ? std::string("no model_type field")
                                             : fmt::format("unknown model_type '{}'", text_excerpt(type)),
                                list));
  }
  const ConfigFields fields(config, fmt::format("{} ({})", where, type));
  DecoderConfig c = read_family(fields, type);
  c.seq = seq.value_or(std::min(fields.count("max_position_embeddings", kDefaultHfSequence), kDefaultHfSequence));
  return c;
}

bool is_hf_spec(const std::string& spec) { return spec.rfind(kSpecPrefix, 0) == 0; }

Graph build_hf_model(const std::string& spec) {
  const auto [path, seq] = split_spec(spec);
  if (path.empty()) throw UserError("model spec 'hf:' needs a config.json path: hf:PATH");
  const nlohmann::json config = [&] {
    try {
      return parse_json_text(read_text_file(path, "config"));
    } catch (const UserError& error) {
      throw UserError(fmt::format("{}: {}", path, error.what()));
    }
  }();
  if (config.is_object() && config.value("model_type", nlohmann::json()).is_string() &&
      config["model_type"] == "gpt2") {
    return build_gpt2_from_hf(ConfigFields(config, path + " (gpt2)"), seq);
  }
  const DecoderConfig decoder = decoder_config_from_hf(config, path, seq);
  return build_decoder(fmt::format("hf:{}", path), decoder);
}

}  // namespace burst::graph
