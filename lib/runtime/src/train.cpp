#include "burst/runtime/train.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>

#include <fmt/format.h>
#include <torch/torch.h>

#include "burst/checkpoint/checkpoint_file.h"
#include "burst/cluster/cluster.h"
#include "burst/data/dataset.h"
#include "burst/data/sampler.h"
#include "burst/graph/data_fit.h"
#include "burst/launch/worker_status.h"
#include "burst/layers/device.h"
#include "burst/runtime/c10d_communicator.h"
#include "burst/runtime/plan_executor.h"
#include "burst/job/resume.h"
#include "burst/util/error.h"
#include "burst/util/memory_reuse.h"
#include "background_child.h"
#include "batch_loader.h"
#include "evaluation.h"
#include "trace.h"
#include "worker_io.h"
#include "train_log.h"

namespace burst::runtime {
namespace {

// The trace covers the first kTraceSteps steps (or all, if fewer), from a barrier right
// before the first.
constexpr int64_t kTraceSteps = 20;

// Bad paths are refused before connecting, so that no other rank fails first for want of this one.
void check_output_paths(const TrainConfig& config, int rank) {
  if (rank != 0) return;
  if (!config.checkpoint_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(config.checkpoint_dir, error);
    if (error) throw UserError(fmt::format("--checkpoint-dir: cannot create '{}': {}", config.checkpoint_dir, error.message()));
  }
  if (!config.trace_file.empty()) {
    const std::string probe = config.trace_file + ".partial";
    if (!std::ofstream(probe)) throw UserError(fmt::format("--trace: cannot write '{}'", probe));
    std::remove(probe.c_str());
  }
}

std::unique_ptr<Communicator> connect(const TrainConfig& config, const WorkerPlace& place) {
  C10dOptions gloo;
  gloo.timeout = std::chrono::milliseconds(static_cast<int64_t>(config.timeout_s * 1000));
  gloo.rank = place.rank;
  gloo.world_size = place.world_size;
  gloo.master_address = place.master_address;
  gloo.master_port = place.master_port;
  gloo.host_store = place.host_store;
  gloo.rendezvous_file = place.rendezvous_file;
  gloo.socket_interfaces = place.socket_interfaces;
  gloo.nccl = config.device == job::ComputeDevice::Cuda;
  return make_c10d_communicator(gloo);
}

ExecutorOptions executor_options(const TrainConfig& config, int64_t steps, torch::Device device,
                                 const graph::ImportedModel& model) {
  ExecutorOptions options;
  options.device = device;
  options.seed = config.seed;
  options.optimizer = OptimizerOptions{config.optimizer, config.learning_rate, config.momentum, config.weight_decay,
                                       config.schedule};
  options.optimizer.schedule.total_steps = steps;
  options.program = config.program;
  options.dtype = config.dtype == job::DType::Float64 ? torch::kFloat64 : torch::kFloat32;
  options.initial_weights = &model.weights;
  return options;
}

// One worker's run of a job: set up (model, data, connection, executor, background job,
// resumed state), then the steps, then the finish (trace, accuracy, saved parameters).
class TrainingRun {
 public:
  TrainingRun(const TrainJob& job, const WorkerPlace& place)
      : job_(job), config_(job.config), place_(place), model_(detail::load_training_model(config_)),
        graph_(model_.graph), train_(job::load_training_data(config_, graph_)),
        validation_(job::load_validation_data(config_, graph_)), loader_(train_),
        sampler_(train_.num_samples(), job.plan.global_batch, config_.seed),
        steps_(config_.steps > 0 ? config_.steps : config_.epochs * sampler_.steps_per_epoch()),
        status_(launch::WorkerStatus::from_environment(place.rank)) {
    plan::validate_plan(job_.plan, graph_, cluster::builtin_cluster("cpu", place.world_size));
    if (job_.plan.devices != place.world_size) {
      throw UserError(fmt::format("the plan is for {} devices but {} workers run", job_.plan.devices, place.world_size));
    }
    check_output_paths(config_, place.rank);
    const torch::Device device = layers::rank_device(job::kComputeDeviceNames.name(config_.device), place.local_rank);  // before any rank waits for this one
    doing("connecting to the other workers");
    communicator_ = connect(config_, place);
    executor_.emplace(graph_, job_.plan, *communicator_, executor_options(config_, steps_, device, model_));
    if (!config_.background_model.empty()) background_.emplace(config_, place.rank, place.local_rank);
    resume();
    print_header();
  }

  void run_steps() {
    if (tracing()) executor_->start_trace(std::min<int64_t>(steps_ - first_step_, kTraceSteps));
    for (int64_t step = first_step_; step < steps_; ++step) {
      StepResult result = run_step(step);
      if (reduces_loss(step)) check_finite_loss(step, result.loss);
      check_finite_gradient_norm(step, result.gradient_norm);
      if (checkpointed(step)) save_checkpoint(step + 1);
      since_log_.add(result.times);
      if (logged(step)) log_step(step, result);
      if (evaluated(step)) log_evaluation(step);
    }
  }

  void finish() {
    if (tracing()) write_trace();
    // Fashion-MNIST and a --val-dataset are evaluated after the last step (--eval-every did
    // it already if it is set).
    const bool evaluate_last = validation_ && config_.eval_every <= 0 &&
                               (config_.dataset == "fashion-mnist" || !config_.val_dataset.empty());
    if (evaluate_last && steps_ > first_step_) log_evaluation(steps_ - 1);
    const auto state = executor_->gather_parameters();
    if (place_.rank == 0) {
      if (!config_.save_params.empty()) {
        detail::save_parameters(state, config_.save_params);
        std::cout << fmt::format("wrote {} parameters to {}\n", state.size(), config_.save_params);
      }
    }
    communicator_->barrier();
  }

 private:
  void doing(const std::string& activity) {
    if (status_) status_->doing(activity);
  }
  bool tracing() const { return !config_.trace_file.empty(); }
  bool leader() const { return place_.rank == 0; }
  // Every rank knows which steps are logged (they gather step times), checkpointed, and so
  // reduce the loss: a checkpoint is written only after a step whose loss was finite.
  bool logged(int64_t step) const { return step % std::max(1, config_.log_every) == 0 || step + 1 == steps_; }
  bool checkpointed(int64_t step) const {
    return !config_.checkpoint_dir.empty() &&
           (step + 1 == steps_ || (config_.checkpoint_every > 0 && (step + 1) % config_.checkpoint_every == 0));
  }
  bool reduces_loss(int64_t step) const { return logged(step) || checkpointed(step); }
  bool evaluated(int64_t step) const {
    return validation_ && config_.eval_every > 0 && ((step + 1) % config_.eval_every == 0 || step + 1 == steps_);
  }

  // Every rank evaluates its share of the validation set (evaluation.h); rank 0 prints it.
  void log_evaluation(int64_t step) {
    doing(fmt::format("evaluating after step {}", step + 1));
    const detail::Evaluation result = detail::evaluate(graph_, executor_->gather_parameters(), *validation_,
                                                       *communicator_, executor_dtype());
    if (!std::isfinite(result.loss)) {
      throw RunFailure(fmt::format("step {}: the validation loss is {}: training stopped", step + 1, result.loss));
    }
    if (!leader()) return;
    const std::string perplexity =
        validation_->tokens() ? fmt::format("  perplexity {:.3f}", std::exp(result.loss)) : std::string();
    std::cout << fmt::format("validation after step {}: loss {:.6f}  accuracy {:.2f}%{} of {} samples ({})\n",
                             step + 1, result.loss, 100.0 * result.accuracy, perplexity, result.samples,
                             validation_->name())
              << std::flush;
  }
  torch::Dtype executor_dtype() const { return config_.dtype == job::DType::Float64 ? torch::kFloat64 : torch::kFloat32; }

  // A NaN or infinite loss ends the run on every rank alike (each holds the same reduced
  // loss), before the step's checkpoint, so the last one written holds finite weights.
  void check_finite_loss(int64_t step, double loss) const {
    if (std::isfinite(loss)) return;
    throw RunFailure(fmt::format("step {}: the loss is {}: training stopped ({}; try a lower --lr or a warmup)",
                                 step + 1, loss, kept_checkpoint()));
  }

  // With clipping every rank holds the same global norm; a NaN or infinite one skipped the
  // step's update (step_interpreter.cpp) and ends the run before its checkpoint.
  void check_finite_gradient_norm(int64_t step, double norm) const {
    if (config_.program.clip_grad_norm <= 0 || std::isfinite(norm)) return;
    throw RunFailure(fmt::format("step {}: the gradient norm is {}: training stopped, the step not applied ({}; try "
                                 "a lower --lr or a warmup)",
                                 step + 1, std::isnan(norm) ? "NaN" : "infinite", kept_checkpoint()));
  }
  std::string kept_checkpoint() const {
    return last_checkpoint_.empty() ? "no checkpoint was written"
                                    : fmt::format("the last checkpoint is {}", last_checkpoint_);
  }

  // The checkpoint the job names (checked when the job was resolved): its state, any layout.
  void resume() {
    if (job_.resume_from.empty()) return;
    checkpoint::Checkpoint resumed = checkpoint::read_checkpoint_file(job_.resume_from);
    checkpoint::check_checkpoint_model(resumed, graph_, job_.resume_from);
    executor_->load_training_state(resumed.tensors);
    first_step_ = resumed.step;
    last_checkpoint_ = job_.resume_from;
    // Nothing else to restore: dropout draws by (seed, step, layer, sample), on any layout.
    if (leader()) std::cout << fmt::format("resumed from step {} ({})\n", first_step_, job_.resume_from);
  }

  void print_header() const {
    if (!leader()) return;
    std::cout << fmt::format("burst train: {} on {} workers, plan '{}' ({}), global batch {}, {} steps, {} data\n",
                             graph_.name(), place_.world_size, job_.plan_source, job_.plan.strategy,
                             job_.plan.global_batch, steps_, train_.name())
              << std::flush;
  }

  std::vector<int64_t> batch_indices(int64_t step) {
    const data::SamplerPosition position = sampler_.position(step);
    if (!order_ || order_->epoch() != position.epoch) order_ = sampler_.epoch_order(position.epoch);
    return order_->batch(position.step);
  }

  // The step's samples come from the loader; the next step's load while this one runs (from
  // the second step on, when the loader knows which ranges this rank reads).
  StepResult run_step(int64_t step) {
    const BatchSource& source = loader_.begin_step(step, batch_indices(step));
    const bool next = step + 1 < steps_;
    if (next && step > first_step_) loader_.load_ahead(step + 1, batch_indices(step + 1));
    doing(fmt::format("step {} of {}", step + 1, steps_));
    const uint64_t background_samples = background_ ? background_->samples() : 0;
    const uint64_t background_cpu = background_ ? background_->cpu_ns() : 0;
    StepResult result;
    try {
      result = executor_->step(source, step, reduces_loss(step));
    } catch (const RunFailure& error) {
      throw RunFailure(fmt::format("step {}: {}", step + 1, error.what()));
    }
    if (next && step == first_step_) loader_.load_ahead(step + 1, batch_indices(step + 1));
    // The step's time includes its wait for samples, which is not compute: the wait before
    // the program started is added to it, the wait inside it taken out of compute.
    result.times.data_ms = loader_.waited_ms();
    result.times.total_ms += loader_.waited_before_step_ms();
    result.times.compute_ms =
        std::max(0.0, result.times.compute_ms - (loader_.waited_ms() - loader_.waited_before_step_ms()));
    if (background_) {
      result.times.background_samples = static_cast<double>(background_->samples() - background_samples);
      result.times.background_cpu_ms = static_cast<double>(background_->cpu_ns() - background_cpu) * 1e-6;
    }
    return result;
  }

  // A line's times are the means over the steps since the previous line (as Megatron's).
  void log_step(int64_t step, const StepResult& result) {
    const StepTimes mean = since_log_.mean_and_reset();
    std::vector<StepTimes> times;
    try {
      times = executor_->gather_step_times(mean);
    } catch (const RunFailure& error) {  // a peer that stopped after the step, as in one
      throw RunFailure(fmt::format("step {}: {}", step + 1, error.what()));
    }
    if (!leader()) return;
    const std::string norm = config_.program.clip_grad_norm > 0
                                 ? fmt::format("grad norm {:.4f}  ", result.gradient_norm)
                                 : std::string();
    std::cout << fmt::format("step {:>6}  loss {:.6f}  {}{:8.1f} samples/s  {:8.2f} ms/iter  {}{}{}\n", step + 1,
                             result.loss, norm, job_.plan.global_batch * 1000.0 / mean.total_ms, mean.total_ms,
                             detail::data_wait(times), background_ ? detail::background_summary(times) : "",
                             detail::format_rank_times(times))
              << std::flush;
  }

  // Every rank joins the gathering; rank 0 writes the file.
  void save_checkpoint(int64_t done) {
    doing(fmt::format("gathering the checkpoint of step {}", done));
    std::vector<checkpoint::TensorBytes> tensors = executor_->gather_training_state();
    last_checkpoint_ = checkpoint::checkpoint_path(config_.checkpoint_dir, done);  // rank 0 writes it now
    if (!leader()) return;
    checkpoint::Checkpoint out;
    out.model = graph_.name();
    out.model_fingerprint = checkpoint::model_fingerprint(graph_);
    out.step = done;
    out.state = {{"training", job::training_identity(config_, job_.plan.global_batch)},
                 {"written_by",
                  {{"plan", job_.plan.strategy},
                   {"workers", place_.world_size},
                   {"layout", plan::placement_fingerprint(job_.plan)}}}};
    out.tensors = std::move(tensors);
    const std::string path = checkpoint::checkpoint_path(config_.checkpoint_dir, done);
    doing("writing " + path);
    checkpoint::write_checkpoint_file(out, path);
    std::cout << fmt::format("wrote checkpoint {}\n", path) << std::flush;
  }

  void write_trace() {
    if (background_) executor_->trace_background(background_->recent_steps());
    std::vector<int64_t> events;
    const std::string document = executor_->gather_trace(&events);
    if (!leader()) return;
    trace::write_file_atomically(config_.trace_file, document);
    const int64_t total = std::accumulate(events.begin(), events.end(), int64_t{0});
    const std::string per_rank =
        events.size() <= 8 ? fmt::format("{}", fmt::join(events, " + "))
                           : fmt::format("{} to {} per rank", *std::min_element(events.begin(), events.end()),
                                         *std::max_element(events.begin(), events.end()));
    std::cout << fmt::format("wrote trace of steps {}-{} on {} ranks ({} events: {}) to {}\n", first_step_ + 1,
                             first_step_ + std::min<int64_t>(steps_ - first_step_, kTraceSteps), place_.world_size,
                             total, per_rank, config_.trace_file)
              << std::flush;
  }

  const TrainJob& job_;
  const TrainConfig& config_;
  const WorkerPlace& place_;
  const graph::ImportedModel model_;
  const graph::Graph& graph_;
  const data::Dataset train_;
  const std::optional<data::Dataset> validation_;
  detail::BatchLoader loader_;
  const data::EpochSampler sampler_;
  const int64_t steps_;
  std::optional<launch::WorkerStatus> status_;
  std::unique_ptr<Communicator> communicator_;
  std::optional<PlanExecutor> executor_;
  std::optional<detail::BackgroundChild> background_;
  int64_t first_step_ = 0;
  std::string last_checkpoint_;  // the latest written or resumed from, for the message of a run that stops
  std::optional<data::EpochOrder> order_;
  detail::StepTimesSum since_log_;
};

}  // namespace

void run_training_worker(const TrainJob& job, const WorkerPlace& place) {
  torch::set_num_threads(job.config.threads);
  util::keep_freed_memory_for_reuse();  // steps reuse the same blocks: no page faults per step
  TrainingRun run(job, place);
  run.run_steps();
  run.finish();
}

}  // namespace burst::runtime
