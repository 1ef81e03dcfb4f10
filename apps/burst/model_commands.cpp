#include "model_commands.h"

#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/graph/model_json.h"
#include "burst/graph/onnx_import.h"
#include "burst/graph/zoo.h"
#include "burst/util/error.h"
#include "burst/util/format.h"
#include "burst/util/table.h"
#include "model_report.h"
#include "model_option.h"

namespace burst::cli {
namespace {

using Align = TextTable::Align;

std::string input_description(const graph::Graph& graph) {
  std::string text;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    if (graph.layer(id).op() != graph::OpKind::Input) continue;
    const auto& info = graph.info(id);
    if (!text.empty()) text += " ";
    text += graph::shape_to_string(info.output_shape);
    if (info.output_dtype != graph::DType::Float32) text += std::string(" ") + graph::dtype_name(info.output_dtype);
  }
  return text;
}

std::string options_description(const graph::ZooEntry& entry) {
  std::string text;
  for (const auto& option : entry.options) {
    text += fmt::format("{}{}={}", text.empty() ? "" : ",", option.key, option.default_value);
  }
  return text.empty() ? "-" : text;
}

void run_models(bool as_json) {
  nlohmann::json entries = nlohmann::json::array();
  TextTable table({{"model", Align::Left},
                   {"params", Align::Right},
                   {"GFLOPs/sample", Align::Right},
                   {"input", Align::Left},
                   {"options (defaults)", Align::Left},
                   {"description", Align::Left}});
  for (const auto& entry : graph::zoo_entries()) {
    const graph::Graph model = graph::build_zoo_model(entry.name);
    const double gflops = static_cast<double>(model.total_forward_flops()) / 1e9;
    if (as_json) {
      nlohmann::json options = nlohmann::json::object();
      for (const auto& option : entry.options) {
        options[option.key] = {{"default", option.default_value}, {"help", option.help}};
      }
      entries.push_back({{"name", entry.name},
                         {"description", entry.description},
                         {"params", model.total_params()},
                         {"forward_flops", model.total_forward_flops()},
                         {"layers", model.size()},
                         {"options", options}});
    } else {
      table.add_row({entry.name, with_thousands(model.total_params()), fmt::format("{:.2f}", gflops),
                     input_description(model), options_description(entry), entry.description});
    }
  }
  if (as_json) {
    std::cout << entries.dump(2) << '\n';
    return;
  }
  table.print(std::cout);
  std::cout << "\nOptions: NAME:key=value,... (e.g. resnet50:image_size=160,classes=10). "
               "Any command taking a model also takes a model file (burst model export).\n";
}

}  // namespace

void add_model_commands(CLI::App& app) {
  struct Options {
    bool json = false;
    std::string model;
    std::string output;
  };
  auto options = std::make_shared<Options>();

  CLI::App* models = app.add_subcommand("models", "List the model zoo with parameter counts");
  models->add_flag("--json", options->json, "Print JSON instead of a table");
  models->callback([options] { run_models(options->json); });

  CLI::App* model = app.add_subcommand("model", "Inspect or export one model");
  model->require_subcommand(1);

  CLI::App* show = model->add_subcommand("show", "Per-layer table: shapes, params, FLOPs, bytes");
  add_model_option(*show, options->model, "model,--model")
      ->required();
  show->add_flag("--json", options->json, "Print JSON instead of a table");
  show->callback([options] {
    const graph::Graph graph = graph::load_model(options->model);
    if (options->json) {
      std::cout << model_report_json(graph).dump(2) << '\n';
    } else {
      print_model_table(graph, std::cout);
    }
  });

  CLI::App* importer = model->add_subcommand(
      "import", "Convert an ONNX model (torch.onnx.export) to a JSON model file; docs/model-import.md");
  importer->add_option("model,--model", options->model, "ONNX file (.onnx)")->required();
  importer->add_option("-o,--output", options->output, "Model file to write")->required();
  importer->callback([options] {
    if (!graph::is_onnx_path(options->model)) {
      throw UserError(fmt::format("burst model import takes an ONNX file ending in .onnx, got '{}'", options->model));
    }
    const graph::ImportedModel imported = graph::import_onnx_file(options->model);
    graph::save_model_file(imported.graph, options->output);
    std::cerr << fmt::format("wrote {} ({} layers, {} parameters; the weights stay in {}: pass it as "
                             "--model to train from them)\n",
                             options->output, imported.graph.size(),
                             with_thousands(imported.graph.total_params()), options->model);
  });

  CLI::App* exporter = model->add_subcommand("export", "Write a model as a JSON model file");
  add_model_option(*exporter, options->model, "model,--model")
      ->required();
  exporter->add_option("-o,--output", options->output, "Model file to write")->required();
  exporter->callback([options] {
    const graph::Graph graph = graph::load_model(options->model);
    graph::save_model_file(graph, options->output);
    std::cerr << fmt::format("wrote {} ({} layers, {} parameters)\n", options->output,
                             graph.size(), with_thousands(graph.total_params()));
  });
}

}  // namespace burst::cli
