#pragma once
// What PlanExecutor keeps between steps, shared by its files: plan_executor.cpp (set-up and
// the step interpreter) and executor_gather.cpp (gathering parameters, checkpoints, step
// times and traces on rank 0). Internal to lib/runtime. Includes libtorch.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <torch/optim.h>

#include "burst/graph/graph.h"
#include "burst/layers/layer_module.h"
#include "burst/layers/sync_batchnorm.h"
#include "burst/layers/tensor_parallel.h"
#include "burst/plan/plan.h"
#include "burst/program/step_program.h"
#include "burst/runtime/communicator.h"
#include "burst/runtime/plan_executor.h"
#include "burst/util/error.h"
#include "gradient_buckets.h"
#include "trace.h"

namespace burst::runtime::detail {

using Clock = std::chrono::steady_clock;

// A communication failure (a peer that died, a timeout: Gloo throws either) as a RunFailure
// saying what was waited for: "<what>: <the error's first line, without backtrace>".
inline RunFailure communication_failure(const std::string& what, const std::exception& error) {
  const auto* torch_error = dynamic_cast<const c10::Error*>(&error);
  std::string text = torch_error != nullptr ? torch_error->what_without_backtrace() : error.what();
  text = text.substr(0, text.find('\n'));
  if (!text.empty() && text[0] == '[' && text.find("] ") != std::string::npos) {
    text = text.substr(text.find("] ") + 2);  // Gloo's "[file.cc:81] " source location
  }
  return RunFailure(fmt::format("{}: {}", what, text));
}

// Waits for `work` outside a step program (gathers, group set-up); a failure (a peer that
// died or stopped, Gloo's timeout) becomes a RunFailure saying what was waited for.
inline void wait_or_fail(PendingWork& work, const std::string& what) {
  try {
    work.wait();
  } catch (const RunFailure&) {
    throw;
  } catch (const std::exception& error) {
    throw communication_failure(what, error);
  }
}

// Tags of the runtime's own messages, above the step program's (program::kTagLimit = 2^29).
// Parameter gathering: from 2^30, 64 a layer. Trace gathering: a range of its own above it
// (parameter gathering stays below 3 x 2^29 for models under 2^23 layers); not 2^31 and up:
// Gloo takes tags as a non-negative int.
inline uint32_t gather_tag(graph::LayerId layer, size_t parameter) {
  return static_cast<uint32_t>((uint64_t{1} << 30) + static_cast<uint64_t>(layer) * 64 + parameter);
}
constexpr uint32_t kTraceTagBase = uint32_t{3} << 29;
constexpr uint32_t kTraceSizeTag = kTraceTagBase;
constexpr uint32_t kTraceBytesTag = kTraceTagBase + 1;

// Times the waits of the all-reduces it passes on (split BatchNorm's statistics sums and
// tensor splits' sums run inside the layers' forward and backward) and reports each to
// `on_wait`; a failed wait is a RunFailure saying what `describe` says was waited for.
class TimedCommunicator final : public Communicator {
 public:
  using Callback = std::function<void(Clock::time_point, Clock::time_point)>;
  TimedCommunicator(Communicator& inner, Callback on_wait, std::function<std::string()> describe)
      : inner_(inner), on_wait_(std::move(on_wait)), describe_(std::move(describe)) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void prepare_groups(const std::vector<std::vector<int>>& groups) override { inner_.prepare_groups(groups); }
  std::unique_ptr<PendingWork> send(torch::Tensor& tensor, int destination, uint32_t tag) override {
    return timed(inner_.send(tensor, destination, tag));
  }
  std::unique_ptr<PendingWork> receive(torch::Tensor& tensor, int source, uint32_t tag) override {
    return timed(inner_.receive(tensor, source, tag));
  }
  std::unique_ptr<PendingWork> allreduce_sum(std::vector<torch::Tensor>& tensors,
                                             const std::vector<int>& group) override {
    return timed(inner_.allreduce_sum(tensors, group));
  }
  std::unique_ptr<PendingWork> allreduce_sum_world(std::vector<torch::Tensor>& tensors) override {
    return timed(inner_.allreduce_sum_world(tensors));
  }
  std::unique_ptr<PendingWork> reduce_scatter_sum(torch::Tensor& shard, torch::Tensor& whole,
                                                  const std::vector<int>& group) override {
    return timed(inner_.reduce_scatter_sum(shard, whole, group));
  }
  std::unique_ptr<PendingWork> all_gather(torch::Tensor& whole, torch::Tensor& shard,
                                          const std::vector<int>& group) override {
    return timed(inner_.all_gather(whole, shard, group));
  }
  void barrier() override { inner_.barrier(); }

 private:
  class Work final : public PendingWork {
   public:
    Work(std::unique_ptr<PendingWork> inner, const TimedCommunicator& owner) : inner_(std::move(inner)), owner_(owner) {}
    void wait() override {
      const auto begin = Clock::now();
      try {
        inner_->wait();
      } catch (const std::exception& error) {
        throw communication_failure(owner_.describe_(), error);
      }
      owner_.on_wait_(begin, Clock::now());
    }

   private:
    std::unique_ptr<PendingWork> inner_;
    const TimedCommunicator& owner_;
  };
  std::unique_ptr<PendingWork> timed(std::unique_ptr<PendingWork> work) {
    return std::make_unique<Work>(std::move(work), *this);
  }

  Communicator& inner_;
  Callback on_wait_;
  std::function<std::string()> describe_;
};

struct ExecutorState {
  const graph::Graph& graph;
  plan::Plan plan;
  Communicator& comm;
  int rank = 0;
  uint64_t seed = 0;  // the run's: layers' initial weights and random ops draw from it
  torch::Dtype dtype = torch::kFloat32;  // of floating point tensors (ExecutorOptions)
  // fp32 or tf32: every layer in `dtype`; bf16 or fp16: layers' forwards under autocast
  // (autocast_scope.h), parameters and messages in `dtype`.
  cost::Precision precision = cost::Precision::Fp32;
  torch::Device device = torch::kCPU;    // of every tensor of a step (ExecutorOptions)
  bool high_priority = true;             // of the step's GPU stream (ExecutorOptions)
  // The step programs: with the loss reduction (steps whose loss is reported) and without.
  program::StepProgram reporting;
  program::StepProgram quiet;
  std::vector<std::unique_ptr<layers::LayerModule>> modules;  // by layer; null: not ours
  std::vector<std::optional<cost::SampleRange>> ranges;       // our samples of each layer
  // Split BatchNorm layers' links to their groups, by layer (null: not synced or not ours).
  std::vector<std::unique_ptr<layers::SyncBatchNormContext>> batchnorm;
  // Tensor splits (docs/tensor-parallel.md), by layer, for the layers this rank runs: its
  // part (0 without a split), the features of the layer's output it holds and of each input
  // it reads (plan::output_blocks, plan::input_blocks: all of them without a split), and a
  // divided layer's link to its tensor group (null otherwise).
  std::vector<int32_t> parts;
  std::vector<cost::FeatureRange> output_held;
  std::vector<std::vector<cost::FeatureRange>> inputs_held;
  std::vector<std::unique_ptr<layers::TensorGroupContext>> tensor_groups;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  OptimizerOptions optimizer_options;  // its base rate and schedule (PlanExecutor::step sets the rate)
  std::unique_ptr<GradientBuckets> buckets;

  // Gradient clipping (ProgramOptions::clip_grad_norm; 0: none) and this step's norm: the
  // global gradient norm once CLIP_GRAD_NORM ran, 0 before (and without clipping).
  double clip_grad_norm = 0;
  double gradient_norm = 0;

  // Step accounting (see StepTimes) and the trace.
  double communication_ms = 0;  // this step's so far
  double idle_ms = 0;
  graph::LayerId current_layer = 0;  // the layer running now (names BatchNorm's all-reduces)
  trace::Recorder trace;
  // The communicator split BatchNorm layers and tensor splits use: `comm`, with its waits
  // counted as communication.
  TimedCommunicator layer_comm;

  ExecutorState(const graph::Graph& g, plan::Plan p, Communicator& c)
      : graph(g),
        plan(std::move(p)),
        comm(c),
        layer_comm(
            c,
            [this](Clock::time_point begin, Clock::time_point end) {
              note_wait(trace::Lane::allreduce, false, begin, end,
                        [&] { return std::make_pair(layer_allreduce_name(), std::string()); });
            },
            [this] { return layer_allreduce_name(); }) {}

  // The all-reduce the current layer makes inside its forward or backward.
  std::string layer_allreduce_name() const {
    const bool batchnorm_layer = graph.layer(current_layer).op() == graph::OpKind::BatchNorm2d;
    return fmt::format("{} {}", name(current_layer),
                       batchnorm_layer ? "statistics all-reduce" : "tensor-parallel all-reduce");
  }

  const std::string& name(graph::LayerId id) const { return graph.layer(id).name; }
  bool ours(graph::LayerId id) const { return ranges[static_cast<size_t>(id)].has_value(); }
  const cost::SampleRange& range(graph::LayerId id) const { return *ranges[static_cast<size_t>(id)]; }
  const cost::TensorSplit& split(graph::LayerId id) const { return plan.layers[static_cast<size_t>(id)].split; }
  int32_t part(graph::LayerId id) const { return parts[static_cast<size_t>(id)]; }

  // Counts a wait of [begin, end) as idle or communication and traces it on `lane` (idle
  // waits on the idle lane). `describe` gives the event's name and args, only if traced.
  template <typename Describe>
  void note_wait(trace::Lane lane, bool idle, Clock::time_point begin, Clock::time_point end, Describe&& describe) {
    const double ms = std::chrono::duration<double, std::milli>(end - begin).count();
    (idle ? idle_ms : communication_ms) += ms;
    if (trace.recording()) {
      const auto [event_name, args] = describe();
      trace.add(idle ? trace::Lane::idle : lane, begin, end, event_name, args);
    }
  }
  // Waits for `work`, then note_wait; returns when it ended. A failure becomes a RunFailure
  // naming what was waited for.
  template <typename Describe>
  Clock::time_point wait(PendingWork& work, trace::Lane lane, bool idle, Describe&& describe) {
    const auto begin = Clock::now();
    try {
      work.wait();
    } catch (const std::exception& error) {
      throw communication_failure(describe().first, error);
    }
    const auto end = Clock::now();
    note_wait(lane, idle, begin, end, std::forward<Describe>(describe));
    return end;
  }
  // A compute event from `begin` to now: "<layer> <what>", or `what` alone for no layer.
  void compute_event(Clock::time_point begin, std::optional<graph::LayerId> layer, const std::string& what) {
    if (!trace.recording()) return;
    trace.add(trace::Lane::compute, begin, Clock::now(), layer ? name(*layer) + " " + what : what);
  }
};

}  // namespace burst::runtime::detail
