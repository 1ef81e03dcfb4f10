#include "burst/runtime/background.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "burst/graph/model_json.h"
#include "burst/layers/layer_module.h"
#include "burst/util/error.h"
#include "burst/util/memory_reuse.h"

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

// The model's layers, built in graph order, with random inputs and labels of `batch`.
struct Trainer {
  const graph::Graph& graph;
  std::vector<std::unique_ptr<layers::LayerModule>> modules;
  std::unique_ptr<torch::optim::SGD> optimizer;

  uint64_t seed;

  Trainer(const graph::Graph& g, uint64_t run_seed, double learning_rate) : graph(g), seed(run_seed) {
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
    std::vector<torch::Tensor> parameters;
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
      torch::manual_seed(seed + static_cast<uint64_t>(id));
      modules.push_back(layers::make_layer_module(graph, id));
      for (const torch::Tensor& p : modules.back()->parameters()) parameters.push_back(p);
    }
    if (!parameters.empty()) optimizer = std::make_unique<torch::optim::SGD>(parameters, torch::optim::SGDOptions(learning_rate));
  }

  // One step: forward through every layer (autograd across them), the losses, backward,
  // update. Dropout draws by (seed, step, layer, sample) as the foreground's. Returns the loss.
  double step(int64_t batch, int64_t step_index) {
    // Gradients are dropped, not zeroed (as in the foreground's executor): backward then
    // hands its result to .grad instead of adding it to zeros. Plain SGD skips a parameter
    // without one, the same update as a zero gradient.
    if (optimizer) {
      for (auto& group : optimizer->param_groups()) {
        for (torch::Tensor& p : group.params()) p.mutable_grad() = torch::Tensor();
      }
    }
    std::vector<torch::Tensor> outputs(graph.size());
    torch::Tensor loss = torch::zeros({});
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
      const graph::OpKind op = graph.layer(id).op();
      std::vector<torch::Tensor> args;
      if (op == graph::OpKind::Input) {
        std::vector<int64_t> shape{batch};
        for (const int64_t d : graph.info(id).output_shape) shape.push_back(d);
        args.push_back(torch::randn(shape));
      }
      for (const graph::LayerId producer : graph.inputs(id)) args.push_back(outputs[static_cast<size_t>(producer)]);
      if (op == graph::OpKind::SoftmaxCrossEntropy) {
        const int64_t classes = graph.info(graph.inputs(id)[0]).output_shape.back();
        args.push_back(torch::randint(0, classes, {batch}, torch::kInt64));
      }
      outputs[static_cast<size_t>(id)] = modules[static_cast<size_t>(id)]->forward(args, layers::RandomKey{seed, step_index, 0});
      if (op == graph::OpKind::SoftmaxCrossEntropy) loss = loss + outputs[static_cast<size_t>(id)].sum() / batch;
    }
    if (loss.requires_grad()) loss.backward();
    if (optimizer) optimizer->step();
    return loss.item<double>();
  }
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
  Trainer trainer(graph, config.seed, config.learning_rate);
  BackgroundProgress* progress = nullptr;
  if (!config.progress_file.empty()) {
    progress = map_progress(config.progress_file, false);
    if (progress == nullptr) throw UserError(fmt::format("cannot map '{}'", config.progress_file));
  }
  const auto start = Clock::now();
  double loss = 0;
  for (int64_t step = 0; config.steps == 0 || step < config.steps; ++step) {
    const uint64_t begin = now_ns();
    loss = trainer.step(config.batch, step);
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
