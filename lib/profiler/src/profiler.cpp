#include "burst/profiler/profiler.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <filesystem>
#include <fstream>
#include <new>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "burst/cost/analytic.h"
#include "burst/graph/model_json.h"
#include "burst/layers/device.h"
#include "burst/layers/layer_module.h"
#include "burst/layers/sync_batchnorm.h"
#include "burst/util/error.h"
#include "burst/util/memory_reuse.h"
#include "measurement.h"
#include "progress.h"
#include "subject.h"
#include "tensor_parts.h"

namespace burst::profiler {

using detail::Subject;
using graph::Graph;
using graph::LayerId;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

// Seconds one call of `work` takes on `device`: on a GPU between CUDA events on the current
// stream (the kernels' time, not the launches'), on the CPU by the steady clock. What `work`
// returns is freed after the clock stops.
template <class Work>
double seconds_of(torch::Device device, Work work) {
  layers::DeviceTimer timer(device);
  if constexpr (std::is_void_v<decltype(work())>) {
    work();
    return timer.stop_ms() / 1000.0;
  } else {
    const auto result = work();
    return timer.stop_ms() / 1000.0;
  }
}

// The device profile_model measures on (ProfileOptions::device, checked): cuda is GPU 0.
torch::Device device_of(const ProfileOptions& options) {
  return layers::rank_device(options.device, 0);
}

// `subject` with its modules and inputs on `device`.
Subject on_device(Subject subject, torch::Device device) {
  if (device.is_cpu()) return subject;
  subject.build = [build = subject.build, device] {
    auto module = build();
    layers::place_layer(*module, device, torch::kFloat32);
    return module;
  };
  subject.inputs = [inputs = subject.inputs, device](int64_t batch) {
    std::vector<torch::Tensor> tensors = inputs(batch);
    for (torch::Tensor& tensor : tensors) tensor = tensor.to(device);
    return tensors;
  };
  return subject;
}

// Runs `body` while `copies` threads each call `work(copy)` over and over (copy = 0 ..
// copies - 1), and returns its result once they have stopped. The threads start before
// `body` does, so every timed call runs against them.
template <class Body>
auto while_contended(int copies, const std::function<void(int)>& work, Body body) -> decltype(body()) {
  if (copies == 0) return body();
  std::atomic<bool> stop{false};
  std::atomic<int> running{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  std::vector<std::thread> threads;
  for (int copy = 0; copy < copies; ++copy) {
    threads.emplace_back([&, copy] {
      ++running;
      try {
        while (!stop.load(std::memory_order_relaxed)) work(copy);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        failure = std::current_exception();
      }
    });
  }
  while (running.load() < copies) std::this_thread::yield();
  struct Joiner {  // stops and joins the threads however `body` leaves
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~Joiner() {
      stop = true;
      for (std::thread& thread : threads) thread.join();
    }
  };
  std::optional<decltype(body())> result;
  {
    const Joiner joiner{stop, threads};
    result.emplace(body());
  }
  if (failure) std::rethrow_exception(failure);
  return std::move(*result);
}

// One contending copy of a layer at a batch: its own module, inputs and recorded forward.
struct LayerCopy {
  std::unique_ptr<layers::LayerModule> module;
  std::vector<torch::Tensor> inputs;
  std::vector<torch::Tensor> differentiable_inputs;
  std::vector<torch::Tensor> weights;
  torch::Tensor out;
  torch::Tensor grad_out;
};

std::vector<LayerCopy> layer_copies(const Subject& subject, int64_t batch, int count) {
  std::vector<LayerCopy> copies(static_cast<size_t>(count));
  for (LayerCopy& copy : copies) {
    copy.module = subject.build();
    copy.inputs = subject.inputs(batch);
    for (size_t i = 0; i < subject.graph_inputs; ++i) {
      if (copy.inputs[i].is_floating_point()) copy.differentiable_inputs.push_back(copy.inputs[i].requires_grad_(true));
    }
    copy.weights = copy.module->weight_tensors();
    copy.out = copy.module->forward(copy.inputs);
    copy.grad_out = torch::randn_like(copy.out);
  }
  return copies;
}

// The gradient of `copy`'s output w.r.t. its inputs, weights or both (the backward parts
// measure_entry times).
enum class Wrt { Everything, Inputs, Weights };
void copy_backward(LayerCopy& copy, Wrt wrt) {
  std::vector<torch::Tensor> tensors;
  if (wrt != Wrt::Weights) tensors = copy.differentiable_inputs;
  if (wrt != Wrt::Inputs) tensors.insert(tensors.end(), copy.weights.begin(), copy.weights.end());
  if (tensors.empty()) return;
  torch::autograd::grad({copy.out}, tensors, {copy.grad_out}, /*retain_graph=*/true, /*create_graph=*/false,
                        /*allow_unused=*/true);
}

RepetitionPolicy policy_of(const ProfileOptions& options) {
  RepetitionPolicy policy;
  policy.warmup = options.warmup;
  policy.min_repetitions = options.min_repetitions;
  policy.max_repetitions = options.max_repetitions;
  policy.stable_within = options.stable_within;
  policy.time_budget = options.time_budget;
  return policy;
}

void check_options(const std::vector<int64_t>& batch_sizes, const ProfileOptions& o) {
  if (batch_sizes.empty()) throw UserError("no batch sizes to profile");
  for (const int64_t batch : batch_sizes) {
    if (batch <= 0) throw UserError(fmt::format("batch sizes must be positive, got {}", batch));
  }
  if (o.threads < 1) throw UserError(fmt::format("threads must be at least 1, got {}", o.threads));
  if (o.co_located < 1) throw UserError(fmt::format("co-located devices must be at least 1, got {}", o.co_located));
  layers::check_device(o.device, 1);
  if (o.device != "cpu" && o.co_located > 1) {
    throw UserError(fmt::format("--co-located {} models CPU devices sharing a node; a GPU measures alone", o.co_located));
  }
  for (const int32_t parts : o.tensor_parts) {
    if (parts < 2 || parts > 1024) {
      throw UserError(fmt::format("tensor-split parts must be in [2, 1024], got {}", parts));
    }
  }
  if (o.warmup < 0 || o.min_repetitions < 1 || o.max_repetitions < o.min_repetitions) {
    throw UserError(fmt::format(
        "repetitions need warmup >= 0 and 1 <= min <= max, got warmup {}, min {}, max {}",
        o.warmup, o.min_repetitions, o.max_repetitions));
  }
  if (!(o.stable_within > 0) || !(o.time_budget.s() >= 0)) {
    throw UserError(fmt::format("stability tolerance must be > 0 and the time budget >= 0, got {} "
                                "and {} s",
                                o.stable_within, o.time_budget.s()));
  }
}

// The layer's work per sample, copied into every entry so analytic models can be fitted
// from a profile alone.
cost::ProfileEntry entry_skeleton(const Graph& graph, LayerId id, const std::string& signature,
                                  int64_t batch) {
  const graph::LayerInfo& info = graph.info(id);
  cost::ProfileEntry entry;
  entry.signature = signature;
  entry.op = graph::op_name(graph.layer(id).op());
  entry.batch = batch;
  entry.forward_flops_per_sample = info.forward_flops;
  for (const LayerId producer : graph.inputs(id)) {
    entry.input_bytes_per_sample += graph.info(producer).output_bytes;
  }
  entry.output_bytes_per_sample = info.output_bytes;
  entry.params = info.params;
  return entry;
}

// The whole layer `id` as a profile subject.
Subject whole_subject(const Graph& graph, LayerId id) {
  Subject subject;
  subject.build = [&graph, id] { return layers::make_layer_module(graph, id); };
  subject.inputs = [&graph, id](int64_t batch) { return layers::random_inputs(graph, id, batch); };
  subject.graph_inputs = graph.inputs(id).size();
  return subject;
}

// Times one layer (or part) at one batch: forward, then backward w.r.t. everything (the full
// backward), w.r.t. the inputs only and w.r.t. the weights only.
//
// Forward runs with autograd recording, in training mode, as in training. The backward
// passes all replay one recorded graph (retain_graph), so no forward is repeated inside them;
// torch::autograd::grad computes only the gradients asked for (e.g. a convolution computes
// no weight gradient for "inputs only"). Each sample times only the call; results are freed
// after the clock stops. A part with nothing to differentiate is 0 (a layer without
// parameters has no weight gradient; an embedding's int64 ids have no input gradient); a
// part that equals the full backward (only one kind of gradient exists) is not timed twice.
// Long: the timed calls share one recorded forward graph; splitting
// them would hand autograd state between functions.
cost::ProfileEntry measure_entry(const Subject& subject, layers::LayerModule& layer, cost::ProfileEntry entry,
                                 const ProfileOptions& options) {
  const RepetitionPolicy policy = policy_of(options);
  const torch::Device device = device_of(options);
  torch::manual_seed(options.seed + static_cast<uint64_t>(entry.batch));
  std::vector<torch::Tensor> inputs = subject.inputs(entry.batch);
  std::vector<torch::Tensor> differentiable_inputs;
  for (size_t i = 0; i < subject.graph_inputs; ++i) {  // labels are not a graph input
    if (inputs[i].is_floating_point()) {
      differentiable_inputs.push_back(inputs[i].requires_grad_(true));
    }
  }
  const std::vector<torch::Tensor> weights = layer.weight_tensors();
  std::vector<LayerCopy> copies = layer_copies(subject, entry.batch, options.co_located - 1);
  const int contenders = static_cast<int>(copies.size());

  const Summary forward = while_contended(
      contenders, [&](int c) { copies[static_cast<size_t>(c)].module->forward(copies[static_cast<size_t>(c)].inputs); },
      [&] {
        return measure(
            [&] { return seconds_of(device, [&] { return layer.forward(inputs); }); },
            policy);
      });

  const torch::Tensor out = layer.forward(inputs);
  const torch::Tensor grad_out = torch::randn_like(out);
  auto backward = [&](const std::vector<torch::Tensor>& wrt, Wrt part) {
    if (wrt.empty()) return Summary{};
    return while_contended(
        contenders, [&](int c) { copy_backward(copies[static_cast<size_t>(c)], part); },
        [&] {
          return measure(
              [&] {
                return seconds_of(device, [&] {
                  return torch::autograd::grad({out}, wrt, {grad_out}, /*retain_graph=*/true,
                                               /*create_graph=*/false, /*allow_unused=*/true);
                });
              },
              policy);
        });
  };
  std::vector<torch::Tensor> everything = differentiable_inputs;
  everything.insert(everything.end(), weights.begin(), weights.end());
  const Summary full = backward(everything, Wrt::Everything);
  const bool both = !differentiable_inputs.empty() && !weights.empty();
  const Summary input_part = both ? backward(differentiable_inputs, Wrt::Inputs)
                                  : (differentiable_inputs.empty() ? Summary{} : full);
  const Summary weight_part = both ? backward(weights, Wrt::Weights) : (weights.empty() ? Summary{} : full);

  entry.forward = forward.median;
  entry.forward_spread = forward.spread;
  entry.backward = full.median;
  entry.backward_spread = full.spread;
  entry.backward_input = input_part.median;
  entry.backward_weight = weight_part.median;
  // The least-sampled of the timed parts (an untimed part has 0 repetitions: skip it).
  entry.repetitions = forward.repetitions;
  for (const Summary& part : {full, input_part, weight_part}) {
    if (part.repetitions > 0) entry.repetitions = std::min(entry.repetitions, part.repetitions);
  }
  return entry;
}

// A BatchNorm2d split over several ranks runs as layers::sync_batchnorm_forward (statistics
// summed over its ranks, its own autograd function), which costs more than one device's
// fused BatchNorm. Times that path's forward and full backward at the entry's batch, with the
// sum over a group of one (no communication: the simulator prices the all-reduces).
// Long: the forward and backward timing loops share the tensors and
// the autograd graph set up before them.
void measure_split_batchnorm(const Graph& graph, LayerId id, layers::LayerModule& layer, cost::ProfileEntry& entry,
                             const ProfileOptions& options) {
  const RepetitionPolicy policy = policy_of(options);
  const torch::Device device = device_of(options);
  const auto& attrs = std::get<graph::BatchNorm2dAttrs>(graph.layer(id).attrs);
  torch::manual_seed(options.seed + static_cast<uint64_t>(entry.batch));
  const torch::Tensor x = layers::random_inputs(graph, id, entry.batch).at(0).to(device).requires_grad_(true);
  // Contending copies (options.co_located - 1), each with its own module, input and context.
  struct SplitCopy {
    std::unique_ptr<layers::LayerModule> module;
    torch::Tensor x, out, grad_out;
    layers::SyncBatchNormContext context;
  };
  std::vector<SplitCopy> copies(static_cast<size_t>(options.co_located - 1));
  auto split_forward = [&](torch::nn::Module& module, const torch::Tensor& input, layers::SyncBatchNormContext& c) {
    return layers::sync_batchnorm_forward(input, module, attrs.eps, attrs.momentum, c);
  };
  for (SplitCopy& copy : copies) {
    copy.module = layers::make_layer_module(graph, id);
    copy.x = layers::random_inputs(graph, id, entry.batch).at(0).requires_grad_(true);
    copy.context = layers::SyncBatchNormContext{[](torch::Tensor&) {}, entry.batch, 0};
    copy.out = split_forward(copy.module->module(), copy.x, copy.context);
    copy.grad_out = torch::randn_like(copy.out);
  }
  const int contenders = static_cast<int>(copies.size());
  layers::SyncBatchNormContext context{[](torch::Tensor&) {}, entry.batch, 0};
  const Summary forward = while_contended(
      contenders,
      [&](int c) {
        SplitCopy& copy = copies[static_cast<size_t>(c)];
        split_forward(copy.module->module(), copy.x, copy.context);
      },
      [&] {
        return measure(
            [&] { return seconds_of(device, [&] { return split_forward(layer.module(), x, context); }); },
            policy);
      });
  const torch::Tensor out = split_forward(layer.module(), x, context);
  const torch::Tensor grad_out = torch::randn_like(out);
  auto gradients = [](const torch::Tensor& input, layers::LayerModule& module, const torch::Tensor& output,
                      const torch::Tensor& output_gradient) {
    std::vector<torch::Tensor> wrt{input};
    for (const torch::Tensor& weight : module.weight_tensors()) wrt.push_back(weight);
    torch::autograd::grad({output}, wrt, {output_gradient}, /*retain_graph=*/true, /*create_graph=*/false,
                          /*allow_unused=*/true);
  };
  const Summary backward = while_contended(
      contenders,
      [&](int c) {
        SplitCopy& copy = copies[static_cast<size_t>(c)];
        gradients(copy.x, *copy.module, copy.out, copy.grad_out);
      },
      [&] {
        return measure(
            [&] { return seconds_of(device, [&] { gradients(x, layer, out, grad_out); }); },
            policy);
      });
  entry.split_forward = forward.median;
  entry.split_backward = backward.median;
}

// Times the optimizer's update of the layer's parameters: burst train's default, SGD without
// momentum (torch::optim::SGD::step, one `p -= lr * grad` per tensor), with every gradient
// present as after a backward. It reads the weights and gradients and writes the weights, so
// it is memory-bound and independent of the batch. The learning rate is tiny: the weights
// barely move, and nothing measured after this depends on them.
Seconds measure_update(const Subject& subject, layers::LayerModule& layer, const ProfileOptions& options) {
  // The measured layer and its contending copies (options.co_located - 1), each with an
  // optimizer over its own weights.
  const torch::Device device = device_of(options);
  std::vector<std::unique_ptr<layers::LayerModule>> copies;
  for (int c = 1; c < options.co_located; ++c) copies.push_back(subject.build());
  std::vector<std::unique_ptr<torch::optim::SGD>> optimizers;
  std::vector<std::vector<torch::Tensor>> all_weights;
  auto add_optimizer = [&](layers::LayerModule& module) {
    std::vector<torch::Tensor> weights = module.weight_tensors();
    for (torch::Tensor& weight : weights) weight.mutable_grad() = torch::randn_like(weight);
    optimizers.push_back(std::make_unique<torch::optim::SGD>(weights, torch::optim::SGDOptions(1e-9)));
    all_weights.push_back(std::move(weights));
  };
  add_optimizer(layer);
  for (auto& copy : copies) add_optimizer(*copy);
  const Summary update = while_contended(
      static_cast<int>(copies.size()),
      [&](int c) {
        torch::NoGradGuard no_grad;
        optimizers[static_cast<size_t>(c) + 1]->step();
      },
      [&] {
        torch::NoGradGuard no_grad;
        return measure(
            [&] { return seconds_of(device, [&] { optimizers[0]->step(); }); },
            policy_of(options));
      });
  for (torch::Tensor& weight : all_weights[0]) weight.mutable_grad() = torch::Tensor();
  return update.median;
}

// The first line of a libtorch error, without its C++ backtrace.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// Measures `subject` (layer `id`, or one part of it: `what` says which, for errors) at each
// of `batches`, each entry filled in from `skeleton(batch)`, then its optimizer update.
std::vector<cost::ProfileEntry> measure_subject(const Graph& graph, LayerId id, const Subject& subject_on_cpu,
                                                const std::string& what,
                                                const std::function<cost::ProfileEntry(int64_t)>& skeleton,
                                                const std::vector<int64_t>& batches, const ProfileOptions& options) {
  const std::string& name = graph.layer(id).name;
  const char* op = graph::op_name(graph.layer(id).op());
  const Subject subject = on_device(subject_on_cpu, device_of(options));
  torch::manual_seed(options.seed);
  std::unique_ptr<layers::LayerModule> layer = subject.build();
  std::vector<cost::ProfileEntry> entries;
  for (const int64_t batch : batches) {
    try {
      entries.push_back(measure_entry(subject, *layer, skeleton(batch), options));
      if (what.empty() && graph.layer(id).op() == graph::OpKind::BatchNorm2d) {
        measure_split_batchnorm(graph, id, *layer, entries.back(), options);
      }
    } catch (const c10::Error& error) {
      throw UserError(fmt::format("layer '{}' ({}){} at batch {}: libtorch failed: {}", name, op, what, batch,
                                  first_line(error.what_without_backtrace())));
    } catch (const std::bad_alloc&) {
      throw UserError(fmt::format("layer '{}' ({}){} at batch {}: out of memory (try smaller batch sizes)", name,
                                  op, what, batch));
    }
  }
  const Seconds update = graph.info(id).params > 0 ? measure_update(subject, *layer, options) : Seconds(0);
  for (cost::ProfileEntry& entry : entries) entry.update = update;
  return entries;
}

// Measures layer `id` (signature `signature`) at each of `batches`.
std::vector<cost::ProfileEntry> measure_signature(const Graph& graph, LayerId id,
                                                  const std::string& signature,
                                                  const std::vector<int64_t>& batches,
                                                  const ProfileOptions& options) {
  std::vector<cost::ProfileEntry> entries;
  if (graph.layer(id).op() == graph::OpKind::Input) {
    // An input layer computes nothing: what it costs in training (reading and copying a
    // batch) belongs to the data pipeline and the network model, so it is recorded as 0 with
    // 0 repetitions, keeping the model's signatures complete for the cost model.
    for (const int64_t batch : batches) {
      cost::ProfileEntry entry = entry_skeleton(graph, id, signature, batch);
      entry.backward_input = Seconds(0);
      entry.backward_weight = Seconds(0);
      entry.update = Seconds(0);
      entries.push_back(std::move(entry));
    }
    return entries;
  }
  return measure_subject(graph, id, whole_subject(graph, id), "",
                         [&](int64_t batch) { return entry_skeleton(graph, id, signature, batch); }, batches,
                         options);
}

// Measures one part of the layer of `signature` (layer `id`) under `split` at each of
// `batches`; its sums go over a group of one.
std::vector<cost::ProfileEntry> measure_part(const Graph& graph, LayerId id, const std::string& signature,
                                             const cost::TensorSplit& split, const std::vector<int64_t>& batches,
                                             const ProfileOptions& options) {
  layers::TensorGroupContext alone{[](torch::Tensor&) {}};
  const std::string what = fmt::format(" ({}-way {} part)", split.parts, cost::split_kind_name(split.kind));
  return measure_subject(
      graph, id, detail::part_subject(graph, id, split, alone), what,
      [&](int64_t batch) { return detail::part_entry(entry_skeleton(graph, id, signature, batch), graph, id, split); },
      batches, options);
}

// A profile of no entries yet, naming where this run measures: the CPU ("cpu", described by
// its model and thread count) or the GPU (its catalog kind; UserError for one the catalog lacks).
cost::Profile empty_profile(const ProfileOptions& options) {
  cost::Profile profile;
  if (options.device == "cpu") {
    profile.device = "cpu";
    profile.description = cpu_description(options.threads, options.co_located);
    return profile;
  }
  const std::string name = layers::gpu_name(device_of(options));
  const std::optional<std::string> kind = cost::catalog_kind_of_gpu(name);
  if (!kind) {
    throw UserError(fmt::format("GPU '{}' is none of the device catalog's kinds ({}): its profile would have no "
                                "peak and bandwidth to fit against", name, fmt::join(cost::catalog_kinds(), ", ")));
  }
  profile.device = *kind;
  profile.description = fmt::format("{}, CUDA events, libtorch {}", name, TORCH_VERSION);
  return profile;
}

// Loads `path` when it exists and checks it was measured where this run measures.
std::optional<cost::Profile> existing_profile(const std::string& path, const cost::Profile& here) {
  if (path.empty() || !std::filesystem::exists(path)) return std::nullopt;
  cost::Profile existing = cost::load_profile_file(path);
  if (existing.device != here.device || existing.description != here.description) {
    throw UserError(fmt::format(
        "'{}' holds a profile of {} ({}), but this run measures {} ({}); choose another output "
        "file (-o) or delete it",
        path, existing.device, existing.description, here.device, here.description));
  }
  return existing;
}

}  // namespace

std::string cpu_description(int threads, int co_located) {
  std::string model = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto begin = line.find_first_not_of(" \t", colon + 1);
    if (begin != std::string::npos) model = line.substr(begin);
    break;
  }
  const std::string sharing = co_located > 1 ? fmt::format(", {} co-located", co_located) : std::string();
  return fmt::format("{}, {} thread{}{}, libtorch {}", model, threads, threads == 1 ? "" : "s", sharing,
                     TORCH_VERSION);
}

// Long: the profiling run in the order it happens (options, batches,
// signatures, progress, entries, tensor parts), so the progress lines match the work.
cost::Profile profile_model(const Graph& graph, const std::vector<int64_t>& batch_sizes,
                            const ProfileOptions& options) {
  check_options(batch_sizes, options);
  std::vector<int64_t> batches = batch_sizes;
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());

  const auto start = Clock::now();
  cost::Profile profile = empty_profile(options);
  profile.source = "measured by burst profile (medians of repeated runs; docs/profiler.md)";
  const std::optional<cost::Profile> existing = existing_profile(options.output_path, profile);
  std::set<std::pair<std::string, int64_t>> present;
  if (existing) {
    profile.entries = existing->entries;
    for (const auto& entry : profile.entries) present.emplace(cost::profile_key(entry.signature, entry.split), entry.batch);
  }
  // Write (or rewrite) the file before measuring anything, so an unwritable path fails now.
  if (!options.output_path.empty()) cost::save_profile_file(profile, options.output_path);
  torch::set_num_threads(options.threads);
  util::keep_freed_memory_for_reuse();  // as the runtime does, so layers are timed as they run there

  // Distinct signatures, in graph order; each is measured with its first layer.
  std::vector<std::pair<std::string, LayerId>> signatures;
  std::set<std::string> seen;
  for (LayerId id = 0; id < static_cast<LayerId>(graph.size()); ++id) {
    std::string signature = graph::layer_signature(graph, id);
    if (seen.insert(signature).second) signatures.emplace_back(std::move(signature), id);
  }

  ProfileStatus status;
  status.signatures_total = signatures.size();
  ProgressLine progress(options.progress, options.redraw, graph.name(), signatures.size());
  progress.update(0, Seconds(0));
  for (const auto& [signature, id] : signatures) {
    // The whole layer, then its parts under the requested tensor splits.
    std::vector<cost::TensorSplit> splits{cost::TensorSplit{}};
    for (const int32_t parts : options.tensor_parts) {
      for (const cost::TensorSplit& split : detail::part_splits(graph, id, parts)) splits.push_back(split);
    }
    bool measured = false;
    for (const cost::TensorSplit& split : splits) {
      std::vector<int64_t> missing;
      for (const int64_t batch : batches) {
        if (present.count({cost::profile_key(signature, split), batch}) == 0) missing.push_back(batch);
      }
      status.entries_reused += static_cast<int64_t>(batches.size() - missing.size());
      if (missing.empty()) continue;
      auto entries = split.splits() ? measure_part(graph, id, signature, split, missing, options)
                                    : measure_signature(graph, id, signature, missing, options);
      for (auto& entry : entries) {
        present.emplace(cost::profile_key(entry.signature, entry.split), entry.batch);
        profile.entries.push_back(std::move(entry));
      }
      status.entries_measured += static_cast<int64_t>(missing.size());
      measured = true;
    }
    if (measured && !options.output_path.empty()) cost::save_profile_file(profile, options.output_path);
    ++status.signatures_done;
    status.elapsed = Seconds(seconds_between(start, Clock::now()));
    progress.update(status.signatures_done, status.elapsed);
    if (options.on_signature) options.on_signature(status);
  }
  progress.finish();
  profile.index();
  return profile;
}

}  // namespace burst::profiler
