#pragma once
// Models from Hugging Face config.json files (docs/llm.md): the model spec "hf:PATH" (or
// "hf:PATH:seq=N") reads the file the user gives -- nothing is fetched -- and builds the
// decoder its `model_type` names: llama, mistral, qwen2, qwen3, mixtral, qwen2_moe,
// qwen3_moe, deepseek_v3, gpt2 and gpt_neox. Sizes come from the file; the sequence length
// from the spec, else min(max_position_embeddings, 8192) (torchtitan's default run length).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "burst/graph/decoder.h"
#include "burst/graph/graph.h"

namespace burst::graph {

inline constexpr int64_t kDefaultHfSequence = 8192;

// The model_types read, in the order error messages list them.
const std::vector<std::string>& hf_model_types();

// A config's sizes as a DecoderConfig (gpt2 included, as a GELU decoder with learned
// positions is not one: see build_hf_model). UserError naming the file and the field for a
// missing or bad field, and listing the known model_types for another one.
DecoderConfig decoder_config_from_hf(const nlohmann::json& config, const std::string& where,
                                     std::optional<int64_t> seq);

// Whether `spec` is an "hf:" spec.
bool is_hf_spec(const std::string& spec);
// Builds the model of an "hf:PATH[:seq=N]" spec.
Graph build_hf_model(const std::string& spec);

}  // namespace burst::graph
