#include "evaluation.h"

#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "burst/layers/layer_module.h"
#include "executor_state.h"

namespace burst::runtime::detail {
namespace {

using Modules = std::vector<std::unique_ptr<layers::LayerModule>>;

// Every layer's module in eval mode holding rank 0's state, on every rank: rank 0 copies the
// state in, the others zero theirs, and a world all-reduce of them all in one flat buffer adds
// them (x + 0 is exact). Integer buffers (BatchNorm's batch count) do not take part in eval.
Modules shared_modules(const graph::Graph& graph, const NamedTensors& state, Communicator& communicator,
                       torch::Dtype dtype) {
  const std::map<std::string, torch::Tensor> values(state.begin(), state.end());
  Modules modules;
  std::vector<torch::Tensor> tensors;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    layers::LayerModuleOptions options;  // a tied head (GPT-2's) reads its embedding's weight
    if (const auto embedding = graph.tied_embedding(id)) {
      options.tied_weight = modules[static_cast<size_t>(*embedding)]->module().parameters().at(0);
    }
    modules.push_back(layers::make_layer_module(graph, id, options));
    layers::place_layer(*modules.back(), torch::kCPU, dtype);
    auto& module = modules.back()->module();
    module.eval();
    auto place = [&](const std::string& key, torch::Tensor& tensor) {
      if (!tensor.is_floating_point()) return;
      const auto found = values.find(layers::state_name(graph, id, key));
      if (communicator.rank() != 0) {
        tensor.zero_();
      } else if (found != values.end()) {
        tensor.copy_(found->second);
      }
      tensors.push_back(tensor);
    };
    for (auto& item : module.named_parameters()) place(item.key(), item.value());
    for (auto& item : module.named_buffers()) place(item.key(), item.value());
  }
  if (communicator.size() > 1 && !tensors.empty()) {
    std::vector<torch::Tensor> pieces;
    for (const torch::Tensor& tensor : tensors) pieces.push_back(tensor.reshape({-1}));
    std::vector<torch::Tensor> flat{torch::cat(pieces)};
    wait_or_fail(*communicator.allreduce_sum_world(flat), "sending the parameters to evaluate");
    int64_t offset = 0;
    for (torch::Tensor& tensor : tensors) {
      tensor.copy_(flat[0].narrow(0, offset, tensor.numel()).view_as(tensor));
      offset += tensor.numel();
    }
  }
  return modules;
}

// {loss sum, correct labels} of samples [begin, end) through the first loss.
std::pair<double, double> evaluate_chunk(const graph::Graph& graph, const Modules& modules,
                                         const data::Dataset& dataset, const std::vector<int64_t>& all,
                                         int64_t begin, int64_t end, torch::Dtype dtype) {
  std::vector<torch::Tensor> outputs(graph.size());
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    std::vector<torch::Tensor> args;
    if (graph.layer(id).op() == graph::OpKind::Input) {
      torch::Tensor features = features_of(dataset, all, begin, end);
      args.push_back(features.is_floating_point() ? features.to(dtype) : features);
    }
    for (const graph::LayerId producer : graph.inputs(id)) args.push_back(outputs[static_cast<size_t>(producer)]);
    if (graph.layer(id).op() == graph::OpKind::SoftmaxCrossEntropy) {
      const torch::Tensor labels = labels_of(dataset, all, begin, end);
      const double correct = args[0].argmax(-1).eq(labels).sum().item<double>();  // every token counts
      args.push_back(labels);
      const double loss = modules[static_cast<size_t>(id)]->forward(args).to(torch::kFloat64).sum().item<double>();
      return {loss, correct};
    }
    outputs[static_cast<size_t>(id)] = modules[static_cast<size_t>(id)]->forward(args);
  }
  BURST_ASSERT(false, "a trained model has a loss");
  return {0, 0};
}

}  // namespace

Evaluation evaluate(const graph::Graph& graph, const NamedTensors& state, const data::Dataset& dataset,
                    Communicator& communicator, torch::Dtype dtype) {
  torch::NoGradGuard no_grad;
  const Modules modules = shared_modules(graph, state, communicator, dtype);
  std::vector<int64_t> all(static_cast<size_t>(dataset.num_samples()));
  std::iota(all.begin(), all.end(), int64_t{0});
  const int64_t chunks = (dataset.num_samples() + kEvaluationChunk - 1) / kEvaluationChunk;
  torch::Tensor sums = torch::zeros({chunks, 2}, torch::kFloat64);  // per chunk: loss sum, correct labels
  auto row = sums.accessor<double, 2>();
  for (int64_t chunk = communicator.rank(); chunk < chunks; chunk += communicator.size()) {
    const int64_t begin = chunk * kEvaluationChunk;
    const int64_t end = std::min(dataset.num_samples(), begin + kEvaluationChunk);
    const auto [loss, correct] = evaluate_chunk(graph, modules, dataset, all, begin, end, dtype);
    row[chunk][0] = loss;
    row[chunk][1] = correct;
  }
  if (communicator.size() > 1) {
    std::vector<torch::Tensor> buffers{sums};
    wait_or_fail(*communicator.allreduce_sum_world(buffers), "the evaluation's all-reduce");
  }
  double loss = 0;
  double correct = 0;
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {  // in chunk order, as one process
    loss += row[chunk][0];
    correct += row[chunk][1];
  }
  Evaluation result;
  result.samples = dataset.num_samples();
  result.loss = loss / static_cast<double>(result.samples);
  result.accuracy = correct / static_cast<double>(result.samples * dataset.labels_per_sample());
  return result;
}

}  // namespace burst::runtime::detail
