#pragma once
// Human table and machine JSON describing a model graph (burst model show, burst models).
#include <ostream>

#include <nlohmann/json_fwd.hpp>

#include "burst/graph/graph.h"

namespace burst::cli {

// One row per layer: id, name, op, inputs, output shape, params, forward FLOPs and output
// activation bytes per sample; then totals with thousands separators.
void print_model_table(const graph::Graph& graph, std::ostream& out);

// {"name", "layers": [{id, name, op, inputs, output_shape, output_dtype, params,
//  forward_flops, output_bytes}], "totals": {layers, params, forward_flops, output_bytes}}.
nlohmann::json model_report_json(const graph::Graph& graph);

}  // namespace burst::cli
