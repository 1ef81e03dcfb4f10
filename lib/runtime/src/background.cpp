#include "burst/runtime/background.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "burst/graph/model_json.h"
#include "burst/plan/plan.h"
#include "burst/layers/device.h"
#include "burst/runtime/plan_executor.h"
#include "burst/util/error.h"
#include "burst/util/memory_reuse.h"
#include "solo_communicator.h"

namespace burst::runtime {
namespace {

using Clock = std::chrono::steady_clock;

BackgroundProgress* map_progress(const std::string& path, bool create) {
  const int fd = ::open(path.c_str(), O_RDWR | (create ? O_CREAT : 0) | O_CLOEXEC, 0600);
  if (fd < 0) return nullptr;
  if (create && ::ftruncate(fd, sizeof(BackgroundProgress)) != 0) {
    ::close(fd);
    return nullptr;
  }
  void* mapping = ::mmap(nullptr, sizeof(BackgroundProgress), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  return mapping == MAP_FAILED ? nullptr : static_cast<BackgroundProgress*>(mapping);
}

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

// Refuses what random data cannot feed: integer inputs and sequence losses.
void check_background_model(const graph::Graph& graph) {
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    if (graph.layer(id).op() == graph::OpKind::Input && graph.info(id).output_dtype != graph::DType::Float32) {
      throw UserError(fmt::format("background jobs feed random float inputs; '{}' of {} takes integers",
                                  graph.layer(id).name, graph.name()));
    }
    if (graph.layer(id).op() == graph::OpKind::SoftmaxCrossEntropy &&
        graph.info(graph.inputs(id)[0]).output_shape.size() != 1) {
      throw UserError(fmt::format("background jobs train classifiers; loss '{}' of {} takes sequence logits",
                                  graph.layer(id).name, graph.name()));
    }
  }
}

// The job's step: the step program of a one-rank data-parallel plan at its batch, run by
// the foreground's executor (the same builder, the same interpreter), on random inputs and
// labels, with plain SGD.
class BackgroundTrainer {
 public:
  BackgroundTrainer(const graph::Graph& graph, int64_t batch, uint64_t seed, double learning_rate, torch::Device device)
      : graph_(graph),
        executor_(graph, plan::plan_data_parallel(graph, 1, batch), solo_, options(seed, learning_rate, device)) {}

  // One step; the loss when `report_loss`.
  double step(int64_t step_index, bool report_loss) {
    BatchSource source;
    source.features = [&](graph::LayerId id, int64_t begin, int64_t end) {
      std::vector<int64_t> shape{end - begin};
      for (const int64_t d : graph_.info(id).output_shape) shape.push_back(d);
      return torch::randn(shape);
    };
    source.labels = [&](graph::LayerId id, int64_t begin, int64_t end) {
      const int64_t classes = graph_.info(graph_.inputs(id)[0]).output_shape.back();
      return torch::randint(0, classes, {end - begin}, torch::kInt64);
    };
    return executor_.step(source, step_index, report_loss).loss;
  }

 private:
  static ExecutorOptions options(uint64_t seed, double learning_rate, torch::Device device) {
    ExecutorOptions options;
    options.device = device;
    options.high_priority = false;  // on a GPU: below the foreground's stream
    options.seed = seed;
    options.optimizer = OptimizerOptions{job::Optimizer::Sgd, learning_rate, 0.0, 0.0, {}};
    return options;
  }

  const graph::Graph& graph_;
  detail::SoloCommunicator solo_;
  PlanExecutor executor_;
};

}  // namespace

void create_background_progress_file(const std::string& path) {
  BackgroundProgress* progress = map_progress(path, true);
  if (progress == nullptr) throw UserError(fmt::format("cannot create the background progress file '{}'", path));
  std::memset(static_cast<void*>(progress), 0, sizeof(BackgroundProgress));
  ::munmap(progress, sizeof(BackgroundProgress));
}

std::optional<BackgroundProgressView> BackgroundProgressView::open(const std::string& path) {
  BackgroundProgress* progress = map_progress(path, false);
  if (progress == nullptr) return std::nullopt;
  return BackgroundProgressView(progress);
}

BackgroundProgressView::BackgroundProgressView(BackgroundProgressView&& other) noexcept : progress_(other.progress_) {
  other.progress_ = nullptr;
}

BackgroundProgressView::~BackgroundProgressView() {
  if (progress_ != nullptr) ::munmap(progress_, sizeof(BackgroundProgress));
}

// "cpu" or "cuda:N" (BackgroundJobConfig::device, read by torch's own parser), checked.
torch::Device background_device(const std::string& name) {
  std::optional<torch::Device> parsed;
  try {
    parsed.emplace(name);
  } catch (const c10::Error&) {
  }
  const bool cuda_with_index = parsed && parsed->is_cuda() && parsed->has_index();
  if (!parsed || !(parsed->is_cpu() || cuda_with_index)) {
    throw UserError(fmt::format("--device must be cpu or cuda:N, not '{}'", name));
  }
  return parsed->is_cpu() ? torch::Device(torch::kCPU) : layers::rank_device("cuda", parsed->index());
}

void run_background_job(const BackgroundJobConfig& config) {
  if (config.batch < 1) throw UserError(fmt::format("the background batch must be at least 1, got {}", config.batch));
  if (config.steps < 0) throw UserError(fmt::format("--steps must be at least 0, got {}", config.steps));
  if (config.idle) {
    sched_param parameters{};
    if (::sched_setscheduler(0, SCHED_IDLE, &parameters) != 0) {
      throw UserError(fmt::format("cannot switch to SCHED_IDLE: {}", std::strerror(errno)));
    }
  }
  torch::set_num_threads(1);
  util::keep_freed_memory_for_reuse();
  const graph::Graph graph = graph::load_model(config.model);
  check_background_model(graph);
  torch::manual_seed(config.seed);  // the random batches
  BackgroundTrainer trainer(graph, config.batch, config.seed, config.learning_rate, background_device(config.device));
  BackgroundProgress* progress = nullptr;
  if (!config.progress_file.empty()) {
    progress = map_progress(config.progress_file, false);
    if (progress == nullptr) throw UserError(fmt::format("cannot map '{}'", config.progress_file));
  }
  const auto start = Clock::now();
  double loss = 0;
  for (int64_t step = 0; config.steps == 0 || step < config.steps; ++step) {
    const uint64_t begin = now_ns();
    loss = trainer.step(step, /*report_loss=*/step + 1 == config.steps);
    if (progress != nullptr) {
      const uint64_t slot = progress->steps.load(std::memory_order_relaxed) % BackgroundProgress::kRing;
      progress->begin_ns[slot] = begin;
      progress->end_ns[slot] = now_ns();
      progress->samples.fetch_add(static_cast<uint64_t>(config.batch), std::memory_order_relaxed);
      progress->steps.fetch_add(1, std::memory_order_release);
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::cout << fmt::format("background {}: {} steps of {} samples in {:.3f} s: {:.1f} samples/s, {:.2f} ms per step "
                           "(last loss {:.4f})\n",
                           graph.name(), config.steps, config.batch, seconds,
                           static_cast<double>(config.steps * config.batch) / seconds, 1e3 * seconds / config.steps, loss);
}

}  // namespace burst::runtime
