// The baseline for `burst train --nproc 1` (bench/runtime_vs_ddp.sh): a plain libtorch
// training loop over the same model, built from the burst graph with make_layer_module and
// chained in graph order, with nothing of the runtime in between: no communicator, no plan,
// no re-sharding. SGD, synthetic data of the model's shapes, one process.
//
//   plain_loop --model fmnist_cnn --global-batch 16 --steps 60 [--warmup 20] [--threads 1]
//              [--lr 0.01] [--momentum 0] [--seed 0] [--log-every 0] [--style plain]
//
// Times every step (zero_grad, batch, forward, backward, optimizer step: the same span as
// burst's ms/iter) and prints, after the run, one summary line the benchmark script parses:
//   plain_loop: steady ms/iter M over N steps (skipped W warm-up steps)
// --style layerwise|direct|alternate is a diagnostic (docs/runtime-benchmark.md): the same step in the
// pattern of burst's plan executor (detached leaves, per-layer backward), alone or alternating
// step by step with the plain one in one process, so both see the same machine noise.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <torch/autograd.h>
#include <torch/optim.h>
#include <torch/torch.h>

#include "burst/graph/graph.h"
#include "burst/graph/model_json.h"
#include "burst/layers/layer_module.h"

namespace {

using Clock = std::chrono::steady_clock;
using burst::graph::Graph;
using burst::graph::LayerId;
using burst::graph::OpKind;

// A few synthetic batches (features N(0, 1), labels uniform), cycled: the data costs a copy per
// step, as burst's synthetic dataset does, and no random generation inside the timed loop.
struct Batches {
  std::vector<torch::Tensor> features;
  std::vector<torch::Tensor> labels;
};

}  // namespace

// Kept as one function on purpose (about 200 lines): it is the plain loop a libtorch user
// writes, read top to bottom, the baseline `burst train --nproc 1` is measured against.
int main(int argc, char** argv) {
  CLI::App app{"Plain libtorch training loop over a burst model (baseline for burst train --nproc 1)"};
  std::string model = "fmnist_cnn";
  int64_t batch = 16;
  int64_t steps = 60;
  int64_t warmup = 20;
  int threads = 1;
  double lr = 0.01;
  double momentum = 0.0;
  uint64_t seed = 0;
  int64_t log_every = 0;
  std::string style = "plain";
  app.add_option("--model", model, "Zoo model or model file")->capture_default_str();
  app.add_option("--global-batch", batch, "Samples per step")->capture_default_str();
  app.add_option("--steps", steps, "Training steps")->capture_default_str();
  app.add_option("--warmup", warmup, "Leading steps left out of the mean")->capture_default_str();
  app.add_option("--threads", threads, "Intra-op threads")->capture_default_str();
  app.add_option("--lr", lr, "Learning rate")->capture_default_str();
  app.add_option("--momentum", momentum, "SGD momentum")->capture_default_str();
  app.add_option("--seed", seed, "Seed of the weights and the data")->capture_default_str();
  app.add_option("--log-every", log_every, "Steps between per-step lines (0: none)")->capture_default_str();
  app.add_option("--style", style,
                 "plain (the baseline); layerwise (diagnostic: burst's executor pattern, no communicator); "
                 "direct (layerwise without the zeroed gradient buffer where one consumer); "
                 "alternate (the three in turn, step by step)")
      ->check(CLI::IsMember({"plain", "layerwise", "direct", "alternate"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (batch < 1 || steps <= warmup || warmup < 0) {
    std::cerr << "plain_loop: need --global-batch >= 1 and --steps > --warmup >= 0\n";
    return 2;
  }

  try {
    torch::set_num_threads(threads);
    torch::manual_seed(seed);
    const Graph graph = burst::graph::load_model(model);
    const auto layer_count = static_cast<LayerId>(graph.size());

    std::vector<std::unique_ptr<burst::layers::LayerModule>> modules;
    std::vector<torch::Tensor> parameters;
    LayerId input_layer = -1;
    int64_t classes = 0;
    std::vector<int64_t> sample_shape;
    for (LayerId id = 0; id < layer_count; ++id) {
      modules.push_back(burst::layers::make_layer_module(graph, id));
      for (const torch::Tensor& p : modules.back()->parameters()) parameters.push_back(p);
      const OpKind op = graph.layer(id).op();
      if (op == OpKind::Input) {
        if (input_layer >= 0) throw std::runtime_error("plain_loop supports one input layer");
        input_layer = id;
        sample_shape = graph.info(id).output_shape;
      }
      if (op == OpKind::SoftmaxCrossEntropy && classes == 0) {
        const auto& logits = graph.info(graph.inputs(id)[0]).output_shape;
        if (logits.size() != 1) throw std::runtime_error("plain_loop supports [B, C] logits only");
        classes = logits[0];
      }
      if (op == OpKind::Input && graph.info(id).output_dtype != burst::graph::DType::Float32) {
        throw std::runtime_error("plain_loop supports float inputs only");
      }
    }
    if (input_layer < 0 || classes == 0) throw std::runtime_error("plain_loop needs an input and a loss layer");
    int64_t parameter_count = 0;
    for (const torch::Tensor& p : parameters) parameter_count += p.numel();

    torch::optim::SGD optimizer(parameters, torch::optim::SGDOptions(lr).momentum(momentum));

    Batches data;
    std::vector<int64_t> shape{batch};
    shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
    for (int i = 0; i < 8; ++i) {
      data.features.push_back(torch::randn(shape));
      data.labels.push_back(torch::randint(classes, {batch}, torch::kInt64));
    }
    std::cout << fmt::format("plain_loop: {} ({} parameters), batch {}, {} steps, {} thread(s)\n", graph.name(),
                             parameter_count, batch, steps, threads)
              << std::flush;

    const double inverse_batch = 1.0 / static_cast<double>(batch);
    std::vector<torch::Tensor> outputs(graph.size());

    // The plain loop: layers chained on live tensors, one backward from the loss.
    auto plain_step = [&](const torch::Tensor& features, const torch::Tensor& labels) {
      torch::Tensor loss;
      for (LayerId id = 0; id < layer_count; ++id) {
        std::vector<torch::Tensor> args;
        if (id == input_layer) args.push_back(features);
        for (const LayerId producer : graph.inputs(id)) args.push_back(outputs[static_cast<size_t>(producer)]);
        const bool is_loss = graph.layer(id).op() == OpKind::SoftmaxCrossEntropy;
        if (is_loss) args.push_back(labels);
        outputs[static_cast<size_t>(id)] = modules[static_cast<size_t>(id)]->forward(args);
        if (is_loss) {
          // Per-sample losses, summed and divided by the batch (the layer never averages).
          const torch::Tensor sum = outputs[static_cast<size_t>(id)].sum();
          loss = loss.defined() ? loss + sum : sum;
        }
      }
      loss = loss * inverse_batch;
      loss.backward();
      return loss.detach();
    };

    // Diagnostic (--style layerwise): the pattern of burst's plan executor on one rank, without
    // a communicator: every layer input is a detached leaf, backward runs layer by layer in
    // reverse, each output's gradient assembled in a zeroed tensor from its consumers' leaf
    // gradients. Tells the executor pattern's own cost apart from the rest of the runtime.
    std::vector<std::vector<torch::Tensor>> leaves(graph.size());
    // With `direct`, a gradient with one contribution is used as is instead of being added into
    // a zeroed tensor (what the executor could do when a layer's rows come from one place).
    auto layerwise_step = [&](const torch::Tensor& features, const torch::Tensor& labels, bool direct) {
      torch::Tensor loss_sum = torch::zeros({1});
      for (LayerId id = 0; id < layer_count; ++id) {
        std::vector<torch::Tensor> args;
        leaves[static_cast<size_t>(id)].clear();
        if (id == input_layer) args.push_back(features);
        for (const LayerId producer : graph.inputs(id)) {
          torch::Tensor input = outputs[static_cast<size_t>(producer)].detach();
          if (graph.layer(producer).op() != OpKind::Input) input.requires_grad_(true);
          leaves[static_cast<size_t>(id)].push_back(input);
          args.push_back(input);
        }
        const bool is_loss = graph.layer(id).op() == OpKind::SoftmaxCrossEntropy;
        if (is_loss) args.push_back(labels);
        outputs[static_cast<size_t>(id)] = modules[static_cast<size_t>(id)]->forward(args);
        if (is_loss) loss_sum += outputs[static_cast<size_t>(id)].detach().sum();
      }
      for (LayerId id = layer_count - 1; id >= 0; --id) {
        torch::Tensor& output = outputs[static_cast<size_t>(id)];
        torch::Tensor gradient;
        if (graph.layer(id).op() == OpKind::SoftmaxCrossEntropy) {
          gradient = torch::full_like(output, inverse_batch);
        } else if (graph.layer(id).op() != OpKind::Input) {
          std::vector<torch::Tensor> parts;
          for (const LayerId consumer : graph.consumers(id)) {
            const auto& inputs = graph.inputs(consumer);
            for (size_t k = 0; k < inputs.size(); ++k) {
              const torch::Tensor& leaf = leaves[static_cast<size_t>(consumer)][k];
              if (inputs[k] == id && leaf.grad().defined()) parts.push_back(leaf.grad());
            }
          }
          if (direct && parts.size() == 1) {
            gradient = parts[0];
          } else {
            gradient = torch::zeros_like(output);
            for (const torch::Tensor& part : parts) gradient += part;
          }
        }
        if (gradient.defined() && output.requires_grad()) torch::autograd::backward({output}, {gradient});
      }
      return loss_sum * inverse_batch;
    };

    const std::vector<std::string> kinds{"plain", "layerwise", "direct"};
    const bool alternate = style == "alternate";
    const int fixed = static_cast<int>(std::find(kinds.begin(), kinds.end(), style) - kinds.begin());
    std::vector<double> step_ms[3];  // by kind
    for (int64_t step = 0; step < steps; ++step) {
      const int kind = alternate ? static_cast<int>(step % 3) : fixed;
      const auto start = Clock::now();
      optimizer.zero_grad();
      const size_t which = static_cast<size_t>(step) % data.features.size();
      const torch::Tensor features = data.features[which].clone();  // the per-step copy of a batch
      const torch::Tensor labels = data.labels[which].clone();
      const torch::Tensor loss =
          kind == 0 ? plain_step(features, labels) : layerwise_step(features, labels, kind == 2);
      optimizer.step();
      const double loss_value = loss.item<double>();
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      // Freed outside the timed span, as burst frees a step's activations after timing it.
      for (torch::Tensor& t : outputs) t = torch::Tensor();
      for (auto& l : leaves) l.clear();
      if (step >= warmup) step_ms[kind].push_back(ms);
      if (log_every > 0 && ((step % log_every) == 0 || step + 1 == steps)) {
        std::cout << fmt::format("step {:>6}  loss {:.6f}  {:8.2f} ms/iter{}\n", step + 1, loss_value, ms,
                                 kind == 0 ? "" : " (" + kinds[static_cast<size_t>(kind)] + ")")
                  << std::flush;
      }
    }
    auto mean = [](const std::vector<double>& v) {
      return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(std::max<size_t>(v.size(), 1));
    };
    if (alternate) {
      std::cout << fmt::format("plain_loop: steady ms/iter {:.3f} plain, {:.3f} layerwise, {:.3f} direct, each over "
                               "{} steps taken in turn (skipped {} warm-up steps)\n",
                               mean(step_ms[0]), mean(step_ms[1]), mean(step_ms[2]), step_ms[1].size(), warmup);
    } else {
      const auto& times = step_ms[fixed];
      std::cout << fmt::format("plain_loop: steady ms/iter {:.3f} over {} steps (skipped {} warm-up steps){}\n",
                               mean(times), times.size(), warmup, fixed == 0 ? "" : " " + style);
    }
  } catch (const std::exception& error) {
    std::cerr << "plain_loop: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
