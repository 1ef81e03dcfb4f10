#include "train_data.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/serialize.h>

#include "burst/data/idx.h"
#include "burst/graph/model_json.h"
#include "burst/layers/layer_module.h"
#include "burst/util/error.h"

namespace burst::runtime::detail {

graph::ImportedModel load_training_model(const TrainConfig& config) {
  const bool onnx = graph::is_onnx_path(config.model);
  if (config.init == "file" && !onnx) {
    throw UserError(fmt::format("--init file takes the weights of an ONNX model; '{}' has none (use --init seed)",
                                config.model));
  }
  if (onnx) return graph::import_onnx_file(config.model, /*weights=*/config.init != "seed");
  return graph::ImportedModel{graph::load_model(config.model), {}};
}

data::Dataset load_dataset(const TrainConfig& config, const graph::Graph& graph, data::Split split) {
  if (config.dataset == "fashion-mnist") return data::load_fashion_mnist(config.dataset_dir, split);
  if (config.dataset != "synthetic") {
    throw UserError(fmt::format("unknown dataset '{}' (fashion-mnist or synthetic)", config.dataset));
  }
  // Samples shaped like the model's input, classes like its first loss's logits.
  data::SyntheticSpec spec;
  spec.num_samples = split == data::Split::train ? config.synthetic_samples : config.synthetic_samples / 4 + 1;
  spec.seed = config.seed + (split == data::Split::train ? 0 : 1);
  // Token models (int64 inputs, GPT-2) get token walks over their input's vocabulary.
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    if (graph.layer(id).op() == graph::OpKind::Input) {
      spec.sample_shape = graph.info(id).output_shape;
      const auto& input = std::get<graph::InputAttrs>(graph.layer(id).attrs);
      if (input.dtype == graph::DType::Int64) spec.vocab = input.vocab;
    }
    if (graph.layer(id).op() == graph::OpKind::SoftmaxCrossEntropy && spec.num_classes == 0) {
      spec.num_classes = graph.info(graph.inputs(id)[0]).output_shape.back();
    }
  }
  return data::synthetic_dataset(spec);
}

torch::Tensor features_of(const data::Dataset& dataset, const std::vector<int64_t>& indices, int64_t begin,
                          int64_t end) {
  std::vector<int64_t> shape{end - begin};
  shape.insert(shape.end(), dataset.sample_shape().begin(), dataset.sample_shape().end());
  torch::Tensor out = torch::empty(shape, torch::kFloat32);
  data::gather_features(dataset, indices, begin, end, out.data_ptr<float>());
  return dataset.tokens() ? out.to(torch::kInt64) : out;  // token ids are exact in float below 2^24
}

torch::Tensor labels_of(const data::Dataset& dataset, const std::vector<int64_t>& indices, int64_t begin,
                        int64_t end) {
  std::vector<int64_t> shape{end - begin};  // [n], or [n, T] next tokens
  if (dataset.tokens()) shape.push_back(dataset.labels_per_sample());
  torch::Tensor out = torch::empty(shape, torch::kInt64);
  data::gather_labels(dataset, indices, begin, end, out.data_ptr<int64_t>());
  return out;
}

double test_accuracy(const graph::Graph& graph, const NamedTensors& state,
                     const data::Dataset& dataset) {
  torch::NoGradGuard no_grad;
  std::map<std::string, torch::Tensor> values(state.begin(), state.end());
  std::vector<std::unique_ptr<layers::LayerModule>> modules;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    modules.push_back(layers::make_layer_module(graph, id));
    auto& module = modules.back()->module();
    module.eval();
    for (auto& item : module.named_parameters()) item.value().copy_(values.at(layers::state_name(graph, id, item.key())));
    for (auto& item : module.named_buffers()) {
      const auto found = values.find(layers::state_name(graph, id, item.key()));
      if (found != values.end()) item.value().copy_(found->second);
    }
  }
  int64_t correct = 0;
  const int64_t chunk = 500;
  std::vector<int64_t> all(static_cast<size_t>(dataset.num_samples()));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  for (int64_t begin = 0; begin < dataset.num_samples(); begin += chunk) {
    const int64_t end = std::min(dataset.num_samples(), begin + chunk);
    std::vector<torch::Tensor> outputs(graph.size());
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
      std::vector<torch::Tensor> args;
      if (graph.layer(id).op() == graph::OpKind::Input) args.push_back(features_of(dataset, all, begin, end));
      for (const graph::LayerId producer : graph.inputs(id)) args.push_back(outputs[static_cast<size_t>(producer)]);
      if (graph.layer(id).op() == graph::OpKind::SoftmaxCrossEntropy) {
        const torch::Tensor labels = labels_of(dataset, all, begin, end);
        correct += args[0].argmax(-1).eq(labels).sum().item<int64_t>();  // every token counts
        args.push_back(labels);
        break;  // the first loss's logits decide
      }
      outputs[static_cast<size_t>(id)] = modules[static_cast<size_t>(id)]->forward(args);
    }
  }
  return static_cast<double>(correct) / static_cast<double>(dataset.num_samples() * dataset.labels_per_sample());
}

namespace {

// `dict` in torch.save's zip format, loadable by torch.load's default weights_only=True
// (torch >= 2.6): a plain dict of tensors. torch::pickle_save tags the dict's type with
// torch.jit._pickle.restore_type_tag, a global weights_only refuses; this pickler does not
// tag aggregates.
std::vector<char> torch_save_bytes(const c10::Dict<std::string, torch::Tensor>& dict) {
  std::vector<char> pickled;
  torch::jit::Pickler pickler([&pickled](const char* data, size_t size) { pickled.insert(pickled.end(), data, data + size); },
                              /*tensor_table=*/nullptr, /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr,
                              /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(dict);
  pickler.stop();
  std::vector<char> archive;
  {
    caffe2::serialize::PyTorchStreamWriter writer([&archive](const void* data, size_t size) {
      const auto* bytes = static_cast<const char*>(data);
      archive.insert(archive.end(), bytes, bytes + size);
      return size;
    });
    torch::jit::writeArchiveAndTensors("data", pickled.data(), pickled.size(), pickler.tensorData(), writer);
    writer.writeEndOfFile();
  }
  return archive;
}

}  // namespace

void save_parameters(const NamedTensors& state, const std::string& path) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& [name, tensor] : state) dict.insert(name, tensor.cpu());
  const std::vector<char> bytes = torch_save_bytes(dict);
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw UserError(fmt::format("cannot write '{}'", temporary));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    throw UserError(fmt::format("cannot rename '{}' to '{}'", temporary, path));
  }
}

}  // namespace burst::runtime::detail
