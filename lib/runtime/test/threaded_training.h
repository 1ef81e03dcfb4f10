#pragma once
// Training a plan in one process for tests: one thread per rank over InProcessWorld,
// executors built one after another (layer initialisation seeds torch's global generator),
// steps run concurrently; the model's parameters gathered on rank 0 (gather_parameters,
// so tensor-split parts come back whole).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "burst/graph/graph.h"
#include "burst/graph/zoo.h"
#include "burst/program/step_program.h"
#include "burst/runtime/plan_executor.h"
#include "in_process_communicator.h"

namespace burst::runtime::testing {

// GPT-2 with 2 blocks of width 64 (4 heads), 16 tokens, a vocabulary of 64.
inline const graph::Graph& tiny_gpt2() {
  static const graph::Graph graph = graph::build_zoo_model("gpt2:layers=2,width=64,heads=4,seq=16,vocab=64");
  return graph;
}

// How many ops of `kind` the step program of `plan` under `options` has on all ranks; the
// program is checked (check_step_program) first.
inline int checked_op_count(const graph::Graph& graph, const plan::Plan& plan, const program::ProgramOptions& options,
                            program::OpKind kind) {
  const program::StepProgram program = program::build_step_program(graph, plan, options);
  program::check_step_program(program, graph, plan);
  int count = 0;
  for (const auto& ops : program.ops) {
    for (const program::Op& op : ops) count += op.kind == kind ? 1 : 0;
  }
  return count;
}

using Parameters = std::map<std::string, torch::Tensor>;

// SGD with momentum 0.9 (so errors would compound), seeded.
inline ExecutorOptions sgd_with_momentum(uint64_t seed, double learning_rate) {
  ExecutorOptions options;
  options.seed = seed;
  options.optimizer = OptimizerOptions{job::Optimizer::Sgd, learning_rate, 0.9, 0.0, {}};
  return options;
}

// What a test does on every rank around its steps (collectives included): before the
// first step (loading a checkpoint) and after the last (gathering one). Steps are numbered
// from `first_step` (a resumed run's).
struct RankHooks {
  int64_t first_step = 0;
  std::function<void(PlanExecutor&)> before_steps;
  std::function<void(PlanExecutor&)> after_steps;
};

// Trains `steps` steps of `plan` (step i's batch: batch_of(i), drawn before the threads
// start); returns the gathered parameters (none without `gather`) and each rank's last
// step result. `report_loss`: every step reduces the loss.
inline std::pair<Parameters, std::vector<StepResult>> train_threads(
    const graph::Graph& graph, const plan::Plan& plan, int steps, InProcessWorld& world,
    const ExecutorOptions& options, const std::function<BatchSource(int64_t)>& batch_of, bool report_loss = true,
    bool gather = true, const RankHooks& hooks = {}) {
  torch::set_num_threads(1);
  std::vector<std::unique_ptr<PlanExecutor>> executors;
  for (int r = 0; r < plan.devices; ++r) {
    executors.push_back(std::make_unique<PlanExecutor>(graph, plan, world.rank(r), options));
  }
  std::vector<BatchSource> batches;
  for (int64_t step = 0; step < steps; ++step) batches.push_back(batch_of(hooks.first_step + step));
  const auto ranks = static_cast<size_t>(plan.devices);
  std::vector<StepResult> results(ranks);
  std::vector<std::string> errors(ranks);
  Parameters parameters;
  std::vector<std::thread> threads;
  for (int r = 0; r < plan.devices; ++r) {
    threads.emplace_back([&, r] {
      try {
        PlanExecutor& executor = *executors[static_cast<size_t>(r)];
        if (hooks.before_steps) hooks.before_steps(executor);
        for (int64_t step = 0; step < steps; ++step) {
          results[static_cast<size_t>(r)] =
              executor.step(batches[static_cast<size_t>(step)], hooks.first_step + step, report_loss);
        }
        if (hooks.after_steps) hooks.after_steps(executor);
        if (!gather) return;
        for (auto& [name, tensor] : executor.gather_parameters()) parameters.emplace(name, tensor);  // rank 0's
      } catch (const std::exception& error) {
        errors[static_cast<size_t>(r)] = error.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < plan.devices; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
  return {parameters, results};
}

// max |a - b| / max |a| over every tensor; the name of the worst in `worst` when given.
inline double largest_relative_error(const Parameters& expected, const Parameters& actual,
                                     std::string* worst = nullptr) {
  EXPECT_EQ(expected.size(), actual.size());
  double largest = 0;
  for (const auto& [name, a] : expected) {
    const auto found = actual.find(name);
    if (found == actual.end()) {
      ADD_FAILURE() << "no parameter " << name;
      continue;
    }
    EXPECT_EQ(a.sizes(), found->second.sizes()) << name;
    if (a.sizes() != found->second.sizes()) continue;
    const double error = (a - found->second).abs().max().item<double>() / a.abs().max().item<double>();
    if (error > largest && worst != nullptr) *worst = name;
    largest = std::max(largest, error);
  }
  return largest;
}

// Random inputs for every input layer and labels for every loss, per step: token ids in
// [0, vocab) or N(0, 1) images, labels in [0, classes) per sample or per token.
inline std::function<BatchSource(int64_t)> random_batches(const graph::Graph& graph, int64_t batch) {
  return [&graph, batch](int64_t step) {
    torch::manual_seed(static_cast<uint64_t>(1000 + step));
    std::map<graph::LayerId, torch::Tensor> features, labels;
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
      const auto& info = graph.info(id);
      std::vector<int64_t> shape{batch};
      if (const auto* input = std::get_if<graph::InputAttrs>(&graph.layer(id).attrs)) {
        shape.insert(shape.end(), info.output_shape.begin(), info.output_shape.end());
        features[id] = input->vocab > 0 ? torch::randint(input->vocab, shape, torch::kInt64) : torch::randn(shape);
      } else if (graph.layer(id).op() == graph::OpKind::SoftmaxCrossEntropy) {
        const graph::Shape& logits = graph.info(graph.inputs(id).at(0)).output_shape;
        shape.insert(shape.end(), logits.begin(), logits.end() - 1);
        labels[id] = torch::randint(logits.back(), shape, torch::kInt64);
      }
    }
    BatchSource source;
    source.features = [features](graph::LayerId id, int64_t begin, int64_t end) {
      return features.at(id).slice(0, begin, end);
    };
    source.labels = [labels](graph::LayerId id, int64_t begin, int64_t end) {
      return labels.at(id).slice(0, begin, end);
    };
    return source;
  };
}

}  // namespace burst::runtime::testing
