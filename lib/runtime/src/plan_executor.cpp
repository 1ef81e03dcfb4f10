#include "burst/runtime/plan_executor.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include <fmt/format.h>

#include "burst/job/unrun_dimensions.h"
#include "burst/layers/device.h"
#include "executor_state.h"
#include "step_interpreter.h"

namespace burst::runtime {

uint64_t layer_seed(uint64_t seed, graph::LayerId id) {
  // SplitMix64's finaliser over (seed, id): distinct, well-mixed seeds per layer.
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (static_cast<uint64_t>(id) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return (z ^ (z >> 31)) & 0x7FFFFFFFFFFFFFFFULL;  // torch::manual_seed takes any uint64
}

namespace {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& parameters,
                                                        const OptimizerOptions& options) {
  if (parameters.empty()) return nullptr;
  if (options.kind == job::Optimizer::Adam) {
    return std::make_unique<torch::optim::Adam>(
        parameters, torch::optim::AdamOptions(options.learning_rate).weight_decay(options.weight_decay));
  }
  if (options.kind == job::Optimizer::AdamW) {
    return std::make_unique<torch::optim::AdamW>(
        parameters, torch::optim::AdamWOptions(options.learning_rate).weight_decay(options.weight_decay));
  }
  return std::make_unique<torch::optim::SGD>(
      parameters,
      torch::optim::SGDOptions(options.learning_rate).momentum(options.momentum).weight_decay(options.weight_decay));
}

// A tied linear layer (GPT-2's LM head) shares the weight of its embedding, built before
// it on this rank: the embedding's own module, or a copy that holds its weight where only
// the head runs (plan::weight_holders).
layers::LayerModuleOptions tied_options(const detail::ExecutorState& s, graph::LayerId id) {
  layers::LayerModuleOptions options;
  const auto embedding = s.graph.tied_embedding(id);
  if (!embedding) return options;
  BURST_ASSERT(s.modules[static_cast<size_t>(*embedding)] != nullptr,
               "a tied layer's embedding runs on its rank, and before it");
  options.tied_weight = s.modules[static_cast<size_t>(*embedding)]->module().parameters().at(0);
  return options;
}

// How many autograd calls add to layer `id`'s parameter gradients on this rank in a step: its
// own segment's, if it runs here, and, for an embedding, that of each tied head that runs
// here in another segment; each once per micro-batch.
int gradient_contributions(const detail::ExecutorState& s, graph::LayerId id) {
  const graph::Graph& graph = s.graph;
  const auto& segment_of = s.reporting.segment_of;
  std::vector<int32_t> segments;
  if (s.ours(id)) segments.push_back(segment_of[static_cast<size_t>(id)]);
  for (const graph::LayerId head : graph.tied_heads(id)) {
    if (!s.ours(head)) continue;
    const int32_t segment = segment_of[static_cast<size_t>(head)];
    if (std::find(segments.begin(), segments.end(), segment) == segments.end()) segments.push_back(segment);
  }
  return static_cast<int>(segments.size() * static_cast<size_t>(s.plan.pipeline.micro_batches));
}

// Sums `tensor` over `group` through the layers' communicator (blocking).
std::function<void(torch::Tensor&)> group_sum(detail::ExecutorState& s, std::vector<int> group) {
  return [&comm = s.layer_comm, group = std::move(group)](torch::Tensor& tensor) {
    std::vector<torch::Tensor> buffers{tensor};
    comm.allreduce_sum(buffers, group)->wait();
  };
}

// Records what this rank holds of layer `id`, if it runs it: its samples, its part, and the
// features of the layer's output and inputs (ExecutorState).
void place(detail::ExecutorState& s, graph::LayerId id) {
  const plan::LayerPlacement& placement = s.plan.layers[static_cast<size_t>(id)];
  const auto layer = static_cast<size_t>(id);
  for (size_t index = 0; index < placement.shards.size(); ++index) {
    if (placement.shards[index].rank != s.rank) continue;
    s.ranges[layer] = placement.shards[index].samples;
    s.parts[layer] = placement.part_of(index);
    const size_t inputs = s.graph.inputs(id).size();
    if (!placement.split.splits()) {
      s.output_held[layer] = {0, cost::output_features(s.graph, id)};
      for (size_t k = 0; k < inputs; ++k) {
        s.inputs_held[layer].push_back({0, cost::output_features(s.graph, s.graph.inputs(id)[k])});
      }
      return;
    }
    s.output_held[layer] = plan::output_blocks(s.plan, s.graph, id)[index].features;
    for (size_t k = 0; k < inputs; ++k) {
      s.inputs_held[layer].push_back(plan::input_blocks(s.plan, s.graph, id, k)[index].features);
    }
    return;
  }
}

// The ranks of this rank's tensor group of layer `id`: its sample group's k shards.
std::vector<int> tensor_group(const detail::ExecutorState& s, graph::LayerId id) {
  const plan::LayerPlacement& placement = s.plan.layers[static_cast<size_t>(id)];
  const auto parts = static_cast<size_t>(placement.split.parts);
  for (size_t first = 0; first < placement.shards.size(); first += parts) {
    std::vector<int> group;
    for (size_t p = 0; p < parts; ++p) group.push_back(placement.shards[first + p].rank);
    std::sort(group.begin(), group.end());
    if (std::binary_search(group.begin(), group.end(), s.rank)) return group;
  }
  BURST_ASSERT(false, "a rank of a tensor-split layer is in one of its groups");
  return {};
}

// Layer `id`'s module on this rank: the whole layer, initialised from its own seed (or the
// model file), in the run's dtype; for a divided tensor split, this rank's part of it.
std::unique_ptr<layers::LayerModule> build_module(detail::ExecutorState& s, graph::LayerId id, uint64_t seed,
                                                  const std::map<std::string, graph::LayerWeights>* initial_weights) {
  const graph::Graph& graph = s.graph;
  torch::manual_seed(layer_seed(seed, id));
  auto module = layers::make_layer_module(graph, id, tied_options(s, id));
  if (initial_weights != nullptr) {
    const auto found = initial_weights->find(graph.layer(id).name);
    if (found != initial_weights->end()) layers::load_initial_weights(*module, found->second, graph.layer(id).name);
  }
  layers::place_layer(*module, s.device, s.dtype);  // the float32 weights, widened, on the rank's device
  const cost::TensorSplit& split = s.split(id);
  if (!s.ours(id) || !split.splits() || !cost::divides_weights(split.kind)) return module;
  s.tensor_groups[static_cast<size_t>(id)] =
      std::make_unique<layers::TensorGroupContext>(layers::TensorGroupContext{group_sum(s, tensor_group(s, id))});
  return layers::make_part_module(graph, id, std::move(module), split, s.part(id),
                                  s.tensor_groups[static_cast<size_t>(id)].get());
}

// This rank's modules, each initialised from its layer's own seed (so its weights do not
// depend on which rank builds it), with the synchronised BatchNorm links the program needs.
void build_modules(detail::ExecutorState& s, uint64_t seed, bool sync_batchnorm,
                   const std::map<std::string, graph::LayerWeights>* initial_weights) {
  const graph::Graph& graph = s.graph;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    place(s, id);
    // A tied embedding's weight lives on its heads' ranks too: there the module is a copy
    // that never runs, built from the same seed (or file) and updated from the same sum.
    if (!s.ours(id)) {
      const std::vector<int> holders = graph.tied_heads(id).empty() ? std::vector<int>{}
                                                                      : plan::weight_holders(s.plan, graph, id);
      if (!std::binary_search(holders.begin(), holders.end(), s.rank)) continue;
    }
    s.modules[static_cast<size_t>(id)] = build_module(s, id, seed, initial_weights);
    const auto& shards = s.plan.layers[static_cast<size_t>(id)].shards;
    if (!sync_batchnorm || graph.layer(id).op() != graph::OpKind::BatchNorm2d || shards.size() < 2) continue;
    s.batchnorm[static_cast<size_t>(id)] = std::make_unique<layers::SyncBatchNormContext>(
        layers::SyncBatchNormContext{group_sum(s, plan::sync_group(s.plan, graph, id)), s.plan.global_batch, 0});
  }
}

}  // namespace

PlanExecutor::PlanExecutor(const graph::Graph& graph, plan::Plan plan, Communicator& communicator,
                           const ExecutorOptions& options)
    : state_(std::make_unique<detail::ExecutorState>(graph, std::move(plan), communicator)) {
  detail::ExecutorState& s = *state_;
  s.rank = communicator.rank();
  s.seed = options.seed;
  if (options.dtype != torch::kFloat32 && options.dtype != torch::kFloat64) {
    throw UserError(fmt::format("the runtime computes in float32 or float64, not {}", c10::toString(options.dtype)));
  }
  s.dtype = options.dtype;
  s.device = options.device;
  s.precision = options.program.precision;
  if (s.device.is_cuda()) {
    // fp32 means plain FP32 matrix products; tf32 lets cuBLAS and cuDNN use TF32 tensor
    // cores (per process: each worker runs one executor on its GPU).
    const bool tf32 = s.precision == cost::Precision::Tf32;
    at::globalContext().setAllowTF32CuBLAS(tf32);
    at::globalContext().setAllowTF32CuDNN(tf32);
  }
  job::refuse_unrun_dimensions(graph, s.plan, options.program);
  s.high_priority = options.high_priority;
  s.clip_grad_norm = options.program.clip_grad_norm;
  s.reporting = program::build_step_program(graph, s.plan, options.program);
  program::BuildScope quiet;
  quiet.reduce_loss = false;
  s.quiet = program::build_step_program(graph, s.plan, options.program, quiet);

  s.modules.resize(graph.size());
  s.ranges.resize(graph.size());
  s.batchnorm.resize(graph.size());
  s.parts.assign(graph.size(), 0);
  s.output_held.resize(graph.size());
  s.inputs_held.resize(graph.size());
  s.tensor_groups.resize(graph.size());
  build_modules(s, options.seed, options.program.sync_batchnorm, options.initial_weights);
  communicator.prepare_groups(s.reporting.groups);  // the same list, in the same order, on every rank
  std::vector<torch::Tensor> parameters;
  for (const auto& module : s.modules) {
    if (!module) continue;
    for (const torch::Tensor& p : module->parameters()) parameters.push_back(p);
  }
  s.buckets = std::make_unique<detail::GradientBuckets>(
      s.reporting, s.rank, [&s](graph::LayerId id) { return s.modules[static_cast<size_t>(id)]->parameters(); },
      [&s](graph::LayerId id) { return gradient_contributions(s, id); }, communicator, options.program.zero_stage);
  job::check_learning_rate_schedule(options.optimizer.schedule, options.optimizer.learning_rate);
  s.optimizer = make_optimizer(s.buckets->optimizer_parameters(parameters), options.optimizer);
  s.optimizer_options = options.optimizer;
}

PlanExecutor::~PlanExecutor() = default;

StepResult PlanExecutor::step(const BatchSource& batch, int64_t step, bool report_loss) {
  detail::ExecutorState& s = *state_;
  const program::StepProgram& program = report_loss ? s.reporting : s.quiet;
  if (s.optimizer) {
    const double rate = job::learning_rate_at(s.optimizer_options.schedule, s.optimizer_options.learning_rate, step);
    for (auto& group : s.optimizer->param_groups()) group.options().set_lr(rate);
  }
  s.trace.begin_step();
  const layers::StepStream stream(s.device, s.high_priority);
  layers::DeviceTimer timer(s.device);  // on a GPU: CUDA events around the step's kernels
  s.communication_ms = 0;
  s.idle_ms = 0;
  s.gradient_norm = 0;
  const double loss_sum = detail::interpret_step(s, program, batch, layers::RandomKey{s.seed, step, 0});

  StepResult result;
  result.times.total_ms = timer.stop_ms();
  const auto start = timer.started();
  const auto end = start + std::chrono::duration_cast<detail::Clock::duration>(
                               std::chrono::duration<double, std::milli>(result.times.total_ms));
  result.loss = report_loss ? loss_sum / static_cast<double>(s.plan.global_batch)
                            : std::numeric_limits<double>::quiet_NaN();
  result.gradient_norm = s.clip_grad_norm > 0 ? s.gradient_norm : std::numeric_limits<double>::quiet_NaN();
  result.times.communication_ms = s.communication_ms;
  result.times.idle_ms = s.idle_ms;
  result.times.compute_ms = std::max(0.0, result.times.total_ms - s.communication_ms - s.idle_ms);
  if (s.trace.recording()) {
    // The loss only where this step reduced it.
    const std::string loss = report_loss ? fmt::format("\"loss\": {:.6g}, ", result.loss) : std::string();
    s.trace.add(trace::Lane::step, start, end, fmt::format("step {}", s.trace.current_step()),
                fmt::format("{}\"compute_ms\": {:.3f}, \"communication_ms\": {:.3f}, \"idle_ms\": {:.3f}", loss,
                            result.times.compute_ms, result.times.communication_ms, result.times.idle_ms));
  }
  s.trace.end_step();
  return result;
}

}  // namespace burst::runtime
