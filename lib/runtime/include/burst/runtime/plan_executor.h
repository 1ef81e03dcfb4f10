#pragma once
// Runs one rank's share of a plan by interpreting its step program (burst/program/
// step_program.h, docs/step-program.md): only the layers the plan gives this rank, on only
// its samples; re-shards by point-to-point messages; each segment (consecutive layers with
// one placement) as one piece of autograd; gradients all-reduced in DDP-style buckets that
// start while the rest of backward runs. Includes libtorch.
//
// Equivalence with one device (docs/architecture.md, invariant 1):
//  - every layer is initialised from its own seed (the run's seed and the layer id), so a
//    layer's weights do not depend on which rank builds it or what else that rank builds;
//  - random ops (dropout) draw per global sample from (seed, step, layer, sample index),
//    so a sample's mask does not depend on which rank computes it (sample_random.h);
//  - the loss is the sum of every loss layer's per-sample losses divided by the global
//    batch, so summing the gradients of a layer's ranks gives the one-device gradient;
//  - every rank of a layer applies the same update to the same summed gradient.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "burst/checkpoint/checkpoint_file.h"
#include "burst/graph/graph.h"
#include "burst/graph/onnx_import.h"
#include "burst/plan/plan.h"
#include "burst/program/program_options.h"
#include "burst/runtime/communicator.h"
#include "burst/job/lr_schedule.h"
#include "burst/job/train_config.h"

namespace burst::runtime {
namespace detail {
struct ExecutorState;
}

struct OptimizerOptions {
  // sgd, adam (weight decay added to the gradient, torch.optim.Adam's) or adamw (decoupled
  // weight decay, torch.optim.AdamW's: p -= lr x weight_decay x p before the step)
  job::Optimizer kind = job::Optimizer::Sgd;
  double learning_rate = 0.01;  // the base rate; step s runs at learning_rate_at(schedule, it, s)
  double momentum = 0.0;      // sgd
  double weight_decay = 0.0;
  job::LearningRateSchedule schedule;
};

// How a plan's steps run beyond the plan itself.
struct ExecutorOptions {
  uint64_t seed = 0;
  OptimizerOptions optimizer;
  program::ProgramOptions program;  // the step run: buckets, BatchNorm mode
  // Of parameters, activations, gradients and messages: torch::kFloat32 or torch::kFloat64
  // (layers are initialised in float32 and widened, so both start from the same weights).
  torch::Dtype dtype = torch::kFloat32;
  // Where this rank computes: the CPU, or its GPU (device.h's rank_device). Batches arrive
  // on the CPU and are copied there; messages and all-reduces carry tensors there.
  torch::Device device = torch::kCPU;
  // On a GPU: the step's kernels go to a stream of this priority (device.h's StepStream):
  // high for a training run's steps, low for a background job's.
  bool high_priority = true;
  // Initial weights by layer name (an imported ONNX model's); layers absent here, and all
  // layers when null, are initialised from their seed. Read only while constructing.
  const std::map<std::string, graph::LayerWeights>* initial_weights = nullptr;
};

// Where one step's samples come from: the features ([n] + input shape) or the labels ([n]
// int64) of samples [begin, end) of the global batch, for input layer `layer` or loss layer
// `layer`.
struct BatchSource {
  std::function<torch::Tensor(graph::LayerId layer, int64_t begin, int64_t end)> features;
  std::function<torch::Tensor(graph::LayerId layer, int64_t begin, int64_t end)> labels;
};

// Time one rank spent in one step, in milliseconds: total = compute + communication + idle.
//
// The executor runs on one thread, and every message it waits for is a blocking wait()
// on an operation issued earlier (receives, sends, all-reduces run in Gloo's background
// threads between issue and wait). Each wait is timed and classified:
//  - idle: waits that happen because this rank has no layer of its own to run, namely
//      (a) a receive of a layer input whose producer layer this rank does not run (forward:
//          the rank waits while other ranks run layers outside its placement), or of an
//          output gradient from a consumer layer this rank does not run (backward: the same);
//      (b) the loss all-reduce over all ranks (on steps that report the loss): this rank's
//          own work is done and it waits for the slowest rank.
//  - communication: every other wait: receives between layers this rank runs on both sides
//    (re-shards), the sends' completion at the end of the step, the gradient buckets'
//    all-reduces and split BatchNorm's statistics all-reduces. These include any time spent
//    waiting for a slower peer of the same layer.
//  - compute: the rest of the step: layer forward and backward, loading the batch, slicing
//    and concatenating rows, packing gradients, the optimizer update (measured as
//    total - communication - idle).
// A wait's whole duration goes to one class: an idle receive includes the transfer itself,
// which is short next to the other ranks' layers it waits for.
struct StepTimes {
  double compute_ms = 0;
  double communication_ms = 0;
  double idle_ms = 0;
  double total_ms = 0;
  // The rank's background job during the step (train.cpp fills these; 0 without one):
  // samples it completed and CPU time it got.
  double background_samples = 0;
  double background_cpu_ms = 0;
  // Of compute_ms, the time the step waited for its samples (train.cpp's loader: 0 when
  // they were ready, loaded while the step before ran).
  double data_ms = 0;
};

struct StepResult {
  double loss = 0;  // of the whole global batch (every rank the same); NaN when not reported
  // With gradient clipping, the global gradient norm before clipping (every rank the same;
  // not finite: the step did not update, and the run must stop); NaN without clipping.
  double gradient_norm = 0;
  StepTimes times;
};

class PlanExecutor {
 public:
  // `plan` must be valid for `graph` and a cluster of communicator.size() ranks.
  // UserError for options the step program refuses (bucket size).
  PlanExecutor(const graph::Graph& graph, plan::Plan plan, Communicator& communicator, const ExecutorOptions& options);
  ~PlanExecutor();

  // Training step `step` (0-based, counted across resumes: random ops draw by it, see
  // burst/layers/sample_random.h, and the learning rate is the schedule's for it): this
  // rank's step program. `report_loss`: end with the
  // world all-reduce of the loss (every rank passes the same values for the same step).
  StepResult step(const BatchSource& batch, int64_t step, bool report_loss);


  // The parameters this rank holds, by qualified name ("<layer>.<param>").
  std::vector<std::pair<std::string, torch::Tensor>> local_parameters() const;

  // Every parameter and buffer (BatchNorm's running statistics) of the model, gathered on
  // rank 0 from the first rank of each layer, named "<layer>.<name>"; other ranks get an
  // empty list. Collective: every rank calls it.
  std::vector<std::pair<std::string, torch::Tensor>> gather_parameters();

  // Every layer's parameters, buffers and optimizer state (src/training_state.h names
  // them), gathered on rank 0 from the first rank of each layer; other ranks get an empty
  // list. What a checkpoint holds: it does not depend on the plan. Collective.
  std::vector<checkpoint::TensorBytes> gather_training_state();

  // Sets the layers this rank holds from `state` (the whole model's, written under any
  // plan and world size). UserError for a missing tensor or one of another shape.
  void load_training_state(const std::vector<checkpoint::TensorBytes>& state);

  // Every rank's step times, by rank, on every rank: one world all-reduce of 7 x world
  // doubles. Collective: every rank calls it for the same steps.
  std::vector<StepTimes> gather_step_times(const StepTimes& mine);

  // Tracing (docs/runtime.md, "Traces"). start_trace: a world barrier, then every rank takes
  // the trace origin (steady_clock) and records the next `steps` steps' events. Collective.
  void start_trace(int64_t steps);
  // Adds this rank's background job's steps (steady clock intervals) to the trace, those
  // within the recorded steps. Call before gather_trace.
  void trace_background(const std::vector<std::pair<std::chrono::steady_clock::time_point,
                                                    std::chrono::steady_clock::time_point>>& steps);
  // Every rank's events gathered on rank 0 (over point-to-point messages in their own tag
  // range) as one Chrome trace JSON document; other ranks get an empty document. The event
  // count of each rank, metadata included, goes to `events_per_rank` on rank 0 when given.
  // Collective; call after the traced steps.
  std::string gather_trace(std::vector<int64_t>* events_per_rank = nullptr);

 private:
  std::unique_ptr<detail::ExecutorState> state_;
};

// The seed of layer `id`'s initial weights in a run seeded with `seed`.
uint64_t layer_seed(uint64_t seed, graph::LayerId id);

}  // namespace burst::runtime
