#pragma once
// The model options every command takes alike: --model SPEC and --seq N, which sets the
// spec's sequence length (graph::with_sequence_length: the zoo's gpt2 and llama, hf: configs).
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "burst/graph/model_json.h"

namespace burst::cli {

inline constexpr const char* kModelHelp =
    "Zoo model (NAME[:key=value,...]), Hugging Face config (hf:config.json) or model file";

// `names` is "--model" or "model,--model" (a positional too). CLI11 runs option callbacks in
// the order the options were added, so --seq applies to the --model already read, wherever
// either stands on the line.
inline CLI::Option* add_model_option(CLI::App& command, std::string& model, const std::string& names = "--model",
                                     const std::string& help = kModelHelp) {
  CLI::Option* option = command.add_option(names, model, help);
  command.add_option_function<int64_t>(
      "--seq", [&model](int64_t tokens) { model = graph::with_sequence_length(model, tokens); },
      "Tokens per sample: sets the model's sequence length (gpt2, llama, hf: configs)");
  return option;
}

}  // namespace burst::cli
