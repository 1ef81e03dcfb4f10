#include "worker_io.h"

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
