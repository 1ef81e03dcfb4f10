#pragma once
// JSON model files (format "burst.model", version 1; see docs/model-format.md).
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "burst/graph/graph.h"

namespace burst::graph {

inline constexpr const char* kModelFormat = "burst.model";
inline constexpr int kModelFormatVersion = 1;

// Canonical JSON of a graph: every attribute written out, layers in topological order.
nlohmann::json model_to_json(const Graph& graph);

// A layer's compute signature: op, canonical attributes and per-sample input shapes, e.g.
//   conv2d{"bias":false,"dilation":[1,1],...}[64,56,56]
// Layers with equal signatures do the same work (names, inputs, tied_to and a loss's
// weight are left out), so a profile measures each signature once and any model with
// that layer can reuse the timing.
std::string layer_signature(const Graph& graph, LayerId id);

// Parses and validates a model document. Throws UserError with a one-line reason that
// names the layer (by name or index) and the field for any malformed input.
Graph model_from_json(const nlohmann::json& document);

// Reads a model file: text -> JSON (nesting deeper than 64 is refused) -> Graph.
// Errors are prefixed with the path.
Graph load_model_file(const std::string& path);
Graph model_from_text(const std::string& text);  // same, from a string (for tests)

// Writes model_to_json(graph) with 2-space indentation; throws UserError on I/O failure.
void save_model_file(const Graph& graph, const std::string& path);

}  // namespace burst::graph

namespace burst::graph {

// What every `--model M` accepts: a zoo spec ("resnet50", "gpt2:layers=24"), a Hugging Face
// config ("hf:PATH", hf_config.h) or a path to a model file. Unknown names list the zoo.
Graph load_model(const std::string& zoo_spec_or_path);

// `spec` with its sequence length set to `seq` tokens (the command line's --seq): the zoo's
// seq option, or an hf: spec's ":seq=N". UserError for a model without one.
std::string with_sequence_length(const std::string& spec, int64_t seq);

}  // namespace burst::graph
