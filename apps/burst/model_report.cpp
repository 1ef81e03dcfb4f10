#include "model_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/util/format.h"
#include "burst/util/table.h"

namespace burst::cli {

using graph::Graph;
using graph::LayerId;

namespace {

using Align = TextTable::Align;

// Input layer ids joined by commas ("-" for an input layer).
std::string inputs_cell(const Graph& graph, LayerId id) {
  const auto& inputs = graph.inputs(id);
  std::string cell;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i != 0) cell += ",";
    cell += std::to_string(inputs[i]);
  }
  return cell.empty() ? "-" : cell;
}

}  // namespace

void print_model_table(const Graph& graph, std::ostream& out) {
  TextTable table({{"id", Align::Right},
                   {"name", Align::Left},
                   {"op", Align::Left},
                   {"inputs", Align::Left},
                   {"output", Align::Left},
                   {"params", Align::Right},
                   {"FLOPs", Align::Right},
                   {"activation", Align::Right}});
  for (LayerId id = 0; id < static_cast<LayerId>(graph.size()); ++id) {
    const auto& layer = graph.layer(id);
    const auto& info = graph.info(id);
    table.add_row({std::to_string(id), layer.name, graph::op_name(layer.op()),
                   inputs_cell(graph, id), graph::shape_to_string(info.output_shape),
                   with_thousands(info.params), with_thousands(info.forward_flops),
                   with_thousands(info.output_bytes)});
  }
  table.add_rule();
  table.add_row({"", fmt::format("total ({} layers)", graph.size()), "", "", "",
                 with_thousands(graph.total_params()), with_thousands(graph.total_forward_flops()),
                 with_thousands(graph.total_output_bytes())});
  out << fmt::format("model {}: {} parameters, {} forward FLOPs and {} of activations per sample\n",
                     graph.name(), with_thousands(graph.total_params()),
                     si_compact(static_cast<double>(graph.total_forward_flops())),
                     bytes_compact(static_cast<double>(graph.total_output_bytes())));
  out << "(inputs are layer ids; FLOPs and activation bytes are per sample; a multiply-add is 2 "
         "FLOPs)\n\n";
  table.print(out);
}

nlohmann::json model_report_json(const Graph& graph) {
  nlohmann::json layers = nlohmann::json::array();
  for (LayerId id = 0; id < static_cast<LayerId>(graph.size()); ++id) {
    const auto& layer = graph.layer(id);
    const auto& info = graph.info(id);
    layers.push_back({{"id", id},
                      {"name", layer.name},
                      {"op", graph::op_name(layer.op())},
                      {"inputs", layer.inputs},
                      {"output_shape", info.output_shape},
                      {"output_dtype", graph::dtype_name(info.output_dtype)},
                      {"params", info.params},
                      {"forward_flops", info.forward_flops},
                      {"output_bytes", info.output_bytes}});
  }
  return {{"name", graph.name()},
          {"layers", std::move(layers)},
          {"totals",
           {{"layers", graph.size()},
            {"params", graph.total_params()},
            {"forward_flops", graph.total_forward_flops()},
            {"output_bytes", graph.total_output_bytes()}}}};
}

}  // namespace burst::cli
