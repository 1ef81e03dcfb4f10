#include "burst/runtime/train.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <csignal>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <numeric>
#include <thread>

#include <fmt/format.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include "burst/checkpoint/checkpoint_file.h"
#include "burst/cluster/cluster.h"
#include "burst/data/dataset.h"
#include "burst/data/idx.h"
#include "burst/data/sampler.h"
#include "burst/graph/data_fit.h"
#include "burst/graph/model_json.h"
#include "burst/graph/onnx_import.h"
#include "burst/launch/child_process.h"
#include "burst/launch/worker_status.h"
#include "burst/layers/layer_module.h"
#include "burst/plan/plan.h"
#include "burst/runtime/gloo_communicator.h"
#include "burst/runtime/plan_executor.h"
#include "burst/runtime/background.h"
#include "burst/runtime/resume.h"
#include "burst/launch/spawn.h"
#include "burst/util/error.h"
#include "burst/util/memory_reuse.h"
#include "trace.h"
#include "training_state.h"

namespace burst::runtime {
namespace {

// Under burst's launcher: the model and plan files still hold what it validated.
void check_unchanged(const TrainConfig& config, const graph::Graph& graph, const plan::Plan& plan) {
  const std::string model = checkpoint::model_fingerprint(graph);
  if (model != config.checked.model) {
    throw UserError(fmt::format("model '{}' changed since the launcher checked it (fingerprint {}, now {})",
                                config.model, config.checked.model, model));
  }
  const std::string placements = plan::placement_fingerprint(plan);
  if (placements != config.checked.plan) {
    throw UserError(fmt::format("plan '{}' changed since the launcher checked it (fingerprint {}, now {})",
                                config.plan_file, config.checked.plan, placements));
  }
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

// Accuracy of the gathered model on `dataset`, on this process (rank 0), in eval mode.
double test_accuracy(const graph::Graph& graph, const std::vector<std::pair<std::string, torch::Tensor>>& state,
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

void save_parameters(const std::vector<std::pair<std::string, torch::Tensor>>& state, const std::string& path) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& [name, tensor] : state) dict.insert(name, tensor);
  const std::vector<char> bytes = torch::pickle_save(dict);
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

// The log line's per-rank part: "compute/comm/idle ms: r0 5.10/6.20/1.60 r1 ..." for up to 8
// ranks; beyond, the minimum / median / maximum over the ranks of each.
// Step times summed over the steps since the last log line.
class StepTimesSum {
 public:
  void add(const StepTimes& times) {
    sum_.compute_ms += times.compute_ms;
    sum_.communication_ms += times.communication_ms;
    sum_.idle_ms += times.idle_ms;
    sum_.total_ms += times.total_ms;
    sum_.background_samples += times.background_samples;
    sum_.background_cpu_ms += times.background_cpu_ms;
    ++steps_;
  }
  // Per step; background samples and CPU time too (per-step figures, as one step's were).
  StepTimes mean_and_reset() {
    const double n = std::max(1, steps_);
    StepTimes mean{sum_.compute_ms / n,         sum_.communication_ms / n, sum_.idle_ms / n,
                   sum_.total_ms / n,           sum_.background_samples / n, sum_.background_cpu_ms / n};
    *this = StepTimesSum();
    return mean;
  }

 private:
  StepTimes sum_;
  int steps_ = 0;
};

std::string format_rank_times(const std::vector<StepTimes>& times) {
  if (times.size() <= 8) {
    std::string out = "compute/comm/idle ms:";
    for (size_t r = 0; r < times.size(); ++r) {
      out += fmt::format(" r{} {:.2f}/{:.2f}/{:.2f}", r, times[r].compute_ms, times[r].communication_ms,
                         times[r].idle_ms);
    }
    return out;
  }
  auto spread = [&](double StepTimes::*field) {
    std::vector<double> values;
    for (const StepTimes& t : times) values.push_back(t.*field);
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    const double median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
    return fmt::format("{:.2f}/{:.2f}/{:.2f}", values.front(), median, values.back());
  };
  return fmt::format("min/median/max ms over {} ranks: compute {}  comm {}  idle {}", times.size(),
                     spread(&StepTimes::compute_ms), spread(&StepTimes::communication_ms),
                     spread(&StepTimes::idle_ms));
}


// "bg 812.3 samples/s  busy 97%  ": every rank's background samples in the step over the
// step's time, and the mean over ranks of (foreground compute + background CPU) / step.
std::string background_summary(const std::vector<StepTimes>& times) {
  double samples = 0, busy = 0;
  for (const StepTimes& t : times) {
    samples += t.background_samples;
    busy += t.total_ms > 0 ? (t.compute_ms + t.background_cpu_ms) / t.total_ms : 0;
  }
  const double step_ms = times.empty() ? 0 : times[0].total_ms;
  return fmt::format("bg {:.1f} samples/s  busy {:.0f}%  ", step_ms > 0 ? samples * 1000.0 / step_ms : 0.0,
                     100.0 * busy / static_cast<double>(std::max<size_t>(times.size(), 1)));
}

// This worker's background job: `burst background ... --idle --progress FILE` in a child
// process that dies with the worker (PR_SET_PDEATHSIG) and is stopped at the end.
class BackgroundChild {
 public:
  BackgroundChild(const TrainConfig& config, int rank) : directory_(make_directory()) {
    BURST_ASSERT(config.background_command != nullptr, "a background job needs its command (TrainConfig)");
    BackgroundJobConfig job;
    job.model = config.background_model;
    job.batch = config.background_batch;
    job.steps = 0;  // until killed
    job.idle = true;
    job.progress_file = directory_ + "/progress";
    job.seed = config.seed + 1000 + static_cast<uint64_t>(rank);
    create_background_progress_file(job.progress_file);
    child_.emplace(config.background_command(job));
    if (auto view = BackgroundProgressView::open(job.progress_file)) view_.emplace(std::move(*view));
    wait_for_first_step();
  }
  ~BackgroundChild() {
    child_.reset();  // killed and reaped before its directory goes
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }
  BackgroundChild(const BackgroundChild&) = delete;
  BackgroundChild& operator=(const BackgroundChild&) = delete;

  // The job loads libtorch and builds its model first (about a second): the foreground
  // starts once it runs, so that what is measured is the two side by side.
  void wait_for_first_step() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (steps() == 0 && std::chrono::steady_clock::now() < deadline) {
      if (child_->ended()) {
        throw UserError("the background job stopped before its first step (its own message is above)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  uint64_t samples() const { return view_ ? view_->progress().samples.load(std::memory_order_acquire) : 0; }
  uint64_t steps() const { return view_ ? view_->progress().steps.load(std::memory_order_acquire) : 0; }
  const BackgroundProgress* progress() const { return view_ ? &view_->progress() : nullptr; }
  // Nanoseconds the child has run on a CPU (the kernel's schedstat).
  uint64_t cpu_ns() const {
    std::ifstream file(fmt::format("/proc/{}/schedstat", child_->pid()));
    uint64_t ns = 0;
    file >> ns;
    return ns;
  }

 private:
  std::string directory_;
  static std::string make_directory() {
    char pattern[] = "/tmp/burst-background-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw UserError("cannot create a directory for the background job");
    return pattern;
  }
  std::optional<launch::ChildProcess> child_;
  std::optional<BackgroundProgressView> view_;
};

// The model, with the ONNX file's initial weights unless --init seed (or the model is not
// an ONNX file).
graph::ImportedModel load_training_model(const TrainConfig& config) {
  const bool onnx = graph::is_onnx_path(config.model);
  if (config.init == "file" && !onnx) {
    throw UserError(fmt::format("--init file takes the weights of an ONNX model; '{}' has none (use --init seed)",
                                config.model));
  }
  if (onnx) return graph::import_onnx_file(config.model, /*weights=*/config.init != "seed");
  return graph::ImportedModel{graph::load_model(config.model), {}};
}

}  // namespace

void run_training_worker(const TrainConfig& config, const WorkerPlace& place) {
  torch::set_num_threads(config.threads);
  util::keep_freed_memory_for_reuse();  // steps reuse the same blocks: no page faults per step
  const graph::ImportedModel model = load_training_model(config);
  const graph::Graph& graph = model.graph;
  plan::Plan plan = config.plan_file.empty() ? plan::plan_data_parallel(graph, place.world_size, config.global_batch)
                                             : plan::load_plan_file(config.plan_file);
  if (config.checked.plan.empty()) {
    plan::validate_plan(plan, graph, cluster::builtin_cluster("cpu", place.world_size));
  } else {
    check_unchanged(config, graph, plan);  // the launcher validated this model and plan
  }
  if (plan.devices != place.world_size) {
    throw UserError(fmt::format("the plan is for {} devices but {} workers run", plan.devices, place.world_size));
  }
  const data::Dataset train = load_dataset(config, graph, data::Split::train);
  graph::check_fits_samples(graph, {train.name(), train.sample_shape(), train.num_classes(), train.tokens()});
  const data::EpochSampler sampler(train.num_samples(), plan.global_batch, config.seed);
  const int64_t steps = config.steps > 0 ? config.steps : config.epochs * sampler.steps_per_epoch();

  // Bad paths are refused before connecting, so that no other rank fails first for want of this one.
  if (!config.checkpoint_dir.empty() && place.rank == 0) {
    std::error_code error;
    std::filesystem::create_directories(config.checkpoint_dir, error);
    if (error) throw UserError(fmt::format("--checkpoint-dir: cannot create '{}': {}", config.checkpoint_dir, error.message()));
  }
  if (!config.trace_file.empty() && place.rank == 0) {
    const std::string probe = config.trace_file + ".partial";
    if (!std::ofstream(probe)) throw UserError(fmt::format("--trace: cannot write '{}'", probe));
    std::remove(probe.c_str());
  }

  std::optional<launch::WorkerStatus> status = launch::WorkerStatus::from_environment(place.rank);
  auto doing = [&](const std::string& activity) {
    if (status) status->doing(activity);
  };
  doing("connecting to the other workers");
  GlooOptions gloo;
  gloo.timeout = std::chrono::milliseconds(static_cast<int64_t>(config.timeout_s * 1000));
  gloo.rank = place.rank;
  gloo.world_size = place.world_size;
  gloo.master_address = place.master_address;
  gloo.master_port = place.master_port;
  gloo.host_store = place.host_store;
  gloo.rendezvous_file = place.rendezvous_file;
  const auto communicator = make_gloo_communicator(gloo);
  ExecutorOptions options;
  options.seed = config.seed;
  options.optimizer = OptimizerOptions{config.optimizer, config.learning_rate, config.momentum, config.weight_decay};
  options.bucket_bytes = config.bucket_mb * 1024 * 1024;
  options.sync_batchnorm = config.batchnorm == "sync";
  options.dtype = config.dtype == "float64" ? torch::kFloat64 : torch::kFloat32;
  options.initial_weights = &model.weights;
  PlanExecutor executor(graph, plan, *communicator, options);

  const bool logging = place.rank == 0;
  std::optional<BackgroundChild> background;
  if (!config.background_model.empty()) background.emplace(config, place.rank);
  int64_t first_step = 0;
  const std::string layout = plan::placement_fingerprint(plan);  // recorded as what wrote a checkpoint
  if (const auto resumed = checkpoint_to_resume(config, graph, plan.global_batch, steps)) {
    executor.load_training_state(resumed->tensors);
    first_step = resumed->step;
    // Nothing else to restore: dropout draws by (seed, step, layer, sample), on any layout.
    if (logging) std::cout << fmt::format("resumed from step {} ({})\n", first_step, config.checkpoint_dir);
  }
  if (logging) {
    std::cout << fmt::format("burst train: {} on {} workers, plan '{}' ({}), global batch {}, {} steps, {} data\n",
                             graph.name(), place.world_size, config.plan_file.empty() ? "dp" : config.plan_file,
                             plan.strategy, plan.global_batch, steps, train.name())
              << std::flush;
  }
  // Every rank joins the gathering; rank 0 writes the file.
  auto save_checkpoint = [&](int64_t done) {
    doing(fmt::format("gathering the checkpoint of step {}", done));
    std::vector<checkpoint::TensorBytes> tensors = executor.gather_training_state();
    if (place.rank != 0) return;
    checkpoint::Checkpoint out;
    out.model = graph.name();
    out.model_fingerprint = checkpoint::model_fingerprint(graph);
    out.step = done;
    out.state = {{"training", training_identity(config, plan.global_batch)},
                 {"written_by", {{"plan", plan.strategy}, {"workers", place.world_size}, {"layout", layout}}}};
    out.tensors = std::move(tensors);
    const std::string path = checkpoint::checkpoint_path(config.checkpoint_dir, done);
    doing("writing " + path);
    checkpoint::write_checkpoint_file(out, path);
    std::cout << fmt::format("wrote checkpoint {}\n", path) << std::flush;
  };
  // The trace covers the first kTraceSteps steps (or all, if fewer), from a barrier right
  // before step 1.
  constexpr int64_t kTraceSteps = 20;
  const bool tracing = !config.trace_file.empty();
  if (tracing) executor.start_trace(std::min<int64_t>(steps - first_step, kTraceSteps));
  std::optional<data::EpochOrder> order;
  StepTimesSum since_log;
  for (int64_t step = first_step; step < steps; ++step) {
    const data::SamplerPosition position = sampler.position(step);
    if (!order || order->epoch() != position.epoch) order = sampler.epoch_order(position.epoch);
    const std::vector<int64_t> indices = order->batch(position.step);
    BatchSource source;
    source.features = [&](graph::LayerId, int64_t begin, int64_t end) { return features_of(train, indices, begin, end); };
    source.labels = [&](graph::LayerId, int64_t begin, int64_t end) { return labels_of(train, indices, begin, end); };
    doing(fmt::format("step {} of {}", step + 1, steps));
    StepResult result;
    const uint64_t background_samples = background ? background->samples() : 0;
    const uint64_t background_cpu = background ? background->cpu_ns() : 0;
    // Every rank knows which steps are logged: those reduce the loss and gather step times.
    const bool logged = step % std::max(1, config.log_every) == 0 || step + 1 == steps;
    try {
      result = executor.step(source, step, logged);
    } catch (const RunFailure& error) {
      throw RunFailure(fmt::format("step {}: {}", step + 1, error.what()));
    }
    if (background) {
      result.times.background_samples = static_cast<double>(background->samples() - background_samples);
      result.times.background_cpu_ms = static_cast<double>(background->cpu_ns() - background_cpu) * 1e-6;
    }
    if (!config.checkpoint_dir.empty() &&
        (step + 1 == steps || (config.checkpoint_every > 0 && (step + 1) % config.checkpoint_every == 0))) {
      save_checkpoint(step + 1);
    }
    since_log.add(result.times);
    if (!logged) continue;
    // A line's times are the means over the steps since the previous line (as Megatron's).
    const StepTimes mean = since_log.mean_and_reset();
    std::vector<StepTimes> times;
    try {
      times = executor.gather_step_times(mean);
    } catch (const RunFailure& error) {  // a peer that stopped after the step, as in one
      throw RunFailure(fmt::format("step {}: {}", step + 1, error.what()));
    }
    if (logging) {
      std::cout << fmt::format("step {:>6}  loss {:.6f}  {:8.1f} samples/s  {:8.2f} ms/iter  {}{}\n", step + 1,
                               result.loss, plan.global_batch * 1000.0 / mean.total_ms, mean.total_ms,
                               background ? background_summary(times) : "", format_rank_times(times))
                << std::flush;
    }
  }
  if (tracing && background && background->progress() != nullptr) {
    const BackgroundProgress& progress = *background->progress();
    const uint64_t done = progress.steps.load(std::memory_order_acquire);
    std::vector<std::pair<trace::Clock::time_point, trace::Clock::time_point>> intervals;
    for (uint64_t i = done > BackgroundProgress::kRing ? done - BackgroundProgress::kRing : 0; i < done; ++i) {
      const uint64_t slot = i % BackgroundProgress::kRing;
      intervals.emplace_back(trace::Clock::time_point(std::chrono::nanoseconds(progress.begin_ns[slot])),
                             trace::Clock::time_point(std::chrono::nanoseconds(progress.end_ns[slot])));
    }
    executor.trace_background(intervals);
  }
  if (tracing) {
    std::vector<int64_t> events;
    const std::string document = executor.gather_trace(&events);
    if (logging) {
      trace::write_file_atomically(config.trace_file, document);
      const int64_t total = std::accumulate(events.begin(), events.end(), int64_t{0});
      const std::string per_rank =
          events.size() <= 8 ? fmt::format("{}", fmt::join(events, " + "))
                             : fmt::format("{} to {} per rank", *std::min_element(events.begin(), events.end()),
                                           *std::max_element(events.begin(), events.end()));
      std::cout << fmt::format("wrote trace of steps {}-{} on {} ranks ({} events: {}) to {}\n", first_step + 1,
                               first_step + std::min<int64_t>(steps - first_step, kTraceSteps), place.world_size, total, per_rank,
                               config.trace_file)
                << std::flush;
    }
  }
  const auto state = executor.gather_parameters();
  if (place.rank == 0) {
    if (config.dataset == "fashion-mnist") {
      const data::Dataset test = load_dataset(config, graph, data::Split::test);
      std::cout << fmt::format("test accuracy: {:.2f}% of {} samples\n", 100.0 * test_accuracy(graph, state, test),
                               test.num_samples());
    }
    if (!config.save_params.empty()) {
      save_parameters(state, config.save_params);
      std::cout << fmt::format("wrote {} parameters to {}\n", state.size(), config.save_params);
    }
  }
  communicator->barrier();
}

}  // namespace burst::runtime
