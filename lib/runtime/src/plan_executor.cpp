#include "burst/runtime/plan_executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <torch/autograd.h>
#include <torch/optim.h>

#include "burst/layers/layer_module.h"
#include "burst/layers/sync_batchnorm.h"
#include "burst/util/error.h"
#include "trace.h"
#include "training_state.h"

namespace burst::runtime {

uint64_t layer_seed(uint64_t seed, graph::LayerId id) {
  // SplitMix64's finaliser over (seed, id): distinct, well-mixed seeds per layer.
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (static_cast<uint64_t>(id) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return (z ^ (z >> 31)) & 0x7FFFFFFFFFFFFFFFULL;  // torch::manual_seed takes any uint64
}

namespace {

using Clock = std::chrono::steady_clock;

// A communication failure (a peer that died, a timeout: Gloo throws either) as a UserError
// saying what was waited for: "<what>: <the error's first line, without backtrace>".
UserError communication_failure(const std::string& what, const std::exception& error) {
  const auto* torch_error = dynamic_cast<const c10::Error*>(&error);
  std::string text = torch_error != nullptr ? torch_error->what_without_backtrace() : error.what();
  text = text.substr(0, text.find('\n'));
  if (!text.empty() && text[0] == '[' && text.find("] ") != std::string::npos) {
    text = text.substr(text.find("] ") + 2);  // Gloo's "[file.cc:81] " source location
  }
  return UserError(fmt::format("{}: {}", what, text));
}

// Message tags: forward and backward of input position `k` of layer `consumer`; parameter
// gathering gets its own range above them.
uint32_t edge_tag(graph::LayerId consumer, size_t k, bool backward) {
  return static_cast<uint32_t>(((static_cast<uint64_t>(consumer) * 64 + k) * 2 + (backward ? 1 : 0)));
}
uint32_t gather_tag(graph::LayerId layer, size_t parameter) {
  return static_cast<uint32_t>((uint64_t{1} << 30) + static_cast<uint64_t>(layer) * 64 + parameter);
}
// Trace gathering: a range of its own above the parameter gathering's (which stays below
// 3 x 2^29 for models under 2^23 layers). Not 2^31 and up: Gloo takes tags as a
// non-negative int and refuses larger ones.
constexpr uint32_t kTraceTagBase = uint32_t{3} << 29;
// Generator states: the tag just below the trace range, above any parameter gathering's.
constexpr uint32_t kGeneratorTag = kTraceTagBase - 1;
constexpr uint32_t kTraceSizeTag = kTraceTagBase;
constexpr uint32_t kTraceBytesTag = kTraceTagBase + 1;

bool is_loss(const graph::Graph& graph, graph::LayerId id) {
  return graph.layer(id).op() == graph::OpKind::SoftmaxCrossEntropy;
}

// Gradients flow back into a producer only when its output is a float activation that is
// not the data itself.
bool carries_gradient(const graph::Graph& graph, graph::LayerId producer) {
  return graph.layer(producer).op() != graph::OpKind::Input &&
         graph.info(producer).output_dtype == graph::DType::Float32;
}

torch::Tensor empty_rows(const graph::Graph& graph, graph::LayerId layer, int64_t rows) {
  std::vector<int64_t> shape{rows};
  for (const int64_t d : graph.info(layer).output_shape) shape.push_back(d);
  const auto dtype = graph.info(layer).output_dtype == graph::DType::Int64 ? torch::kInt64 : torch::kFloat32;
  return torch::empty(shape, torch::TensorOptions().dtype(dtype));
}

// Times the waits of the all-reduces it passes on (split BatchNorm's statistics sums run
// inside the layers' forward and backward) and reports each to `on_wait`.
class TimedCommunicator final : public Communicator {
 public:
  using Callback = std::function<void(Clock::time_point, Clock::time_point)>;
  TimedCommunicator(Communicator& inner, Callback on_wait) : inner_(inner), on_wait_(std::move(on_wait)) {}

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
  void barrier() override { inner_.barrier(); }

 private:
  class Work final : public PendingWork {
   public:
    Work(std::unique_ptr<PendingWork> inner, const Callback& on_wait) : inner_(std::move(inner)), on_wait_(on_wait) {}
    void wait() override {
      const auto begin = Clock::now();
      try {
        inner_->wait();
      } catch (const std::exception& error) {
        throw communication_failure("BatchNorm statistics all-reduce", error);
      }
      on_wait_(begin, Clock::now());
    }

   private:
    std::unique_ptr<PendingWork> inner_;
    const Callback& on_wait_;
  };
  std::unique_ptr<PendingWork> timed(std::unique_ptr<PendingWork> work) {
    return std::make_unique<Work>(std::move(work), on_wait_);
  }

  Communicator& inner_;
  Callback on_wait_;
};

// A send in flight, kept until the end of the step (the tensor must outlive it).
struct PendingSend {
  torch::Tensor rows;
  std::unique_ptr<PendingWork> work;
  graph::LayerId producer;  // the edge it belongs to
  graph::LayerId consumer;
  int peer;
  bool backward;
};

}  // namespace

struct PlanExecutor::State {
  const graph::Graph& graph;
  plan::Plan plan;
  Communicator& comm;
  int rank = 0;
  std::vector<std::unique_ptr<layers::LayerModule>> modules;  // by layer; null: not ours
  std::vector<std::optional<cost::SampleRange>> ranges;       // our samples of each layer
  std::vector<std::vector<int>> groups;                        // sync group by layer
  // Where each layer's output goes: (consumer, input position), by layer, in graph order.
  std::vector<std::vector<std::pair<graph::LayerId, size_t>>> uses;
  // Split BatchNorm layers' links to their groups, by layer (null: not split or not ours).
  std::vector<std::unique_ptr<layers::SyncBatchNormContext>> batchnorm;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  // Derived transfers by (producer, consumer), computed once.
  std::map<std::pair<graph::LayerId, graph::LayerId>, std::vector<cost::Transfer>> transfers;

  // Step accounting (see StepTimes) and the trace.
  double communication_ms = 0;  // this step's so far
  double idle_ms = 0;
  graph::LayerId current_layer = 0;  // the layer running now (names BatchNorm's all-reduces)
  trace::Recorder trace;
  // The communicator split BatchNorm layers use: `comm`, with its waits counted as
  // communication.
  TimedCommunicator batchnorm_comm;

  State(const graph::Graph& g, plan::Plan p, Communicator& c)
      : graph(g),
        plan(std::move(p)),
        comm(c),
        batchnorm_comm(c, [this](Clock::time_point begin, Clock::time_point end) {
          note_wait(trace::Lane::allreduce, false, begin, end, [&] {
            return std::make_pair(fmt::format("{} statistics all-reduce", name(current_layer)), std::string());
          });
        }) {}

  const std::string& name(graph::LayerId id) const { return graph.layer(id).name; }

  // Counts a wait of [begin, end) as idle or communication and traces it on `lane` (idle
  // waits on the idle lane). `describe` gives the event's name and args, only if traced.
  template <typename Describe>
  void note_wait(trace::Lane lane, bool idle, Clock::time_point begin, Clock::time_point end,
                 Describe&& describe) {
    const double ms = std::chrono::duration<double, std::milli>(end - begin).count();
    (idle ? idle_ms : communication_ms) += ms;
    if (trace.recording()) {
      const auto [event_name, args] = describe();
      trace.add(idle ? trace::Lane::idle : lane, begin, end, event_name, args);
    }
  }
  // Waits for `work`, then note_wait; returns when it ended.
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
  void compute_event(Clock::time_point begin, std::optional<graph::LayerId> layer, const char* what) {
    if (!trace.recording()) return;
    trace.add(trace::Lane::compute, begin, Clock::now(), layer ? name(*layer) + " " + what : std::string(what));
  }

  bool ours(graph::LayerId id) const { return ranges[static_cast<size_t>(id)].has_value(); }
  const cost::SampleRange& range(graph::LayerId id) const { return *ranges[static_cast<size_t>(id)]; }
  const std::vector<cost::Transfer>& edge(graph::LayerId producer, graph::LayerId consumer) const {
    return transfers.at({producer, consumer});
  }
};

PlanExecutor::PlanExecutor(const graph::Graph& graph, plan::Plan plan, Communicator& communicator,
                           uint64_t seed, const OptimizerOptions& optimizer)
    : state_(std::make_unique<State>(graph, std::move(plan), communicator)) {
  State& s = *state_;
  s.rank = communicator.rank();
  const auto layer_count = static_cast<graph::LayerId>(graph.size());
  s.modules.resize(graph.size());
  s.ranges.resize(graph.size());
  s.groups.resize(graph.size());
  s.uses.resize(graph.size());
  s.batchnorm.resize(graph.size());
  std::vector<std::vector<int>> all_groups;
  std::vector<torch::Tensor> parameters;
  for (graph::LayerId id = 0; id < layer_count; ++id) {
    for (const cost::Shard& shard : s.plan.layers[static_cast<size_t>(id)].shards) {
      if (shard.rank == s.rank) s.ranges[static_cast<size_t>(id)] = shard.samples;
    }
    for (size_t k = 0; k < graph.inputs(id).size(); ++k) {
      const graph::LayerId producer = graph.inputs(id)[k];
      s.transfers[{producer, id}] = plan::activation_transfers(s.plan, producer, id);
      s.uses[static_cast<size_t>(producer)].emplace_back(id, k);
    }
    s.groups[static_cast<size_t>(id)] = plan::sync_group(s.plan, graph, id);
    if (!s.groups[static_cast<size_t>(id)].empty()) all_groups.push_back(s.groups[static_cast<size_t>(id)]);
    if (graph.layer(id).op() == graph::OpKind::Linear &&
        !std::get<graph::LinearAttrs>(graph.layer(id).attrs).tied_to.empty()) {
      throw UserError(fmt::format("layer '{}': tied weights are not supported by the runtime yet",
                                  graph.layer(id).name));
    }
    if (!s.ours(id)) continue;
    torch::manual_seed(layer_seed(seed, id));
    s.modules[static_cast<size_t>(id)] = layers::make_layer_module(graph, id);
    if (graph.layer(id).op() == graph::OpKind::BatchNorm2d && !s.groups[static_cast<size_t>(id)].empty()) {
      auto sum_over_group = [&comm = s.batchnorm_comm, group = s.groups[static_cast<size_t>(id)]](torch::Tensor& sums) {
        std::vector<torch::Tensor> buffers{sums};
        comm.allreduce_sum(buffers, group)->wait();
      };
      s.batchnorm[static_cast<size_t>(id)] = std::make_unique<layers::SyncBatchNormContext>(
          layers::SyncBatchNormContext{sum_over_group, s.plan.global_batch, 0});
    }
    for (const torch::Tensor& p : s.modules[static_cast<size_t>(id)]->parameters()) parameters.push_back(p);
  }
  std::sort(all_groups.begin(), all_groups.end());
  all_groups.erase(std::unique(all_groups.begin(), all_groups.end()), all_groups.end());
  communicator.prepare_groups(all_groups);
  if (!parameters.empty()) {
    if (optimizer.kind == "adam") {
      s.optimizer = std::make_unique<torch::optim::Adam>(
          parameters, torch::optim::AdamOptions(optimizer.learning_rate).weight_decay(optimizer.weight_decay));
    } else {
      s.optimizer = std::make_unique<torch::optim::SGD>(
          parameters, torch::optim::SGDOptions(optimizer.learning_rate)
                          .momentum(optimizer.momentum)
                          .weight_decay(optimizer.weight_decay));
    }
  }
}

PlanExecutor::~PlanExecutor() = default;

StepResult PlanExecutor::step(const BatchSource& batch) {
  State& s = *state_;
  const graph::Graph& graph = s.graph;
  const auto layer_count = static_cast<graph::LayerId>(graph.size());
  s.trace.begin_step();
  const auto start = Clock::now();
  s.communication_ms = 0;
  s.idle_ms = 0;
  auto no_args = [](std::string name) { return std::make_pair(std::move(name), std::string()); };
  auto peer_args = [](std::string name, int peer, const torch::Tensor& tensor) {
    return std::make_pair(std::move(name), fmt::format("\"peer\": {}, \"bytes\": {}", peer, tensor.nbytes()));
  };
  Clock::time_point mark;  // where the current compute event starts
  // Drop last step's gradients instead of zeroing them (torch 1.13's zero_grad() does): the
  // first backward then hands its result to .grad instead of adding it to a zeroed copy, which
  // is an extra read and write of every weight. Unused parameters get zeros before the update.
  if (s.optimizer) {
    for (auto& group : s.optimizer->param_groups()) {
      for (torch::Tensor& p : group.params()) p.mutable_grad() = torch::Tensor();
    }
  }

  std::vector<torch::Tensor> outputs(graph.size());
  std::vector<std::vector<torch::Tensor>> inputs(graph.size());  // leaves, per input position
  std::vector<PendingSend> sends;                                 // kept alive
  torch::Tensor loss_sum = torch::zeros({1});

  // ---- forward, in graph order ----
  for (graph::LayerId id = 0; id < layer_count; ++id) {
    if (!s.ours(id)) continue;
    s.current_layer = id;
    mark = Clock::now();  // the layer's compute event starts here or after its last receive
    const cost::SampleRange mine = s.range(id);
    std::vector<torch::Tensor> args;
    if (graph.layer(id).op() == graph::OpKind::Input) args.push_back(batch.features(id, mine.begin, mine.end));
    const auto& producers = graph.inputs(id);
    for (size_t k = 0; k < producers.size(); ++k) {
      const graph::LayerId producer = producers[k];
      std::vector<cost::Transfer> pieces;
      for (const cost::Transfer& t : s.edge(producer, id)) {
        if (t.dst_rank == s.rank) pieces.push_back(t);
      }
      std::sort(pieces.begin(), pieces.end(),
                [](const cost::Transfer& a, const cost::Transfer& b) { return a.samples.begin < b.samples.begin; });
      std::vector<torch::Tensor> parts;
      std::vector<std::pair<std::unique_ptr<PendingWork>, int>> receives;  // with the source
      for (const cost::Transfer& piece : pieces) {
        if (piece.local()) {
          parts.push_back(outputs[static_cast<size_t>(producer)].detach().narrow(
              0, piece.samples.begin - s.range(producer).begin, piece.samples.size()));
        } else {
          parts.push_back(empty_rows(graph, producer, piece.samples.size()));
          receives.emplace_back(s.comm.receive(parts.back(), piece.src_rank, edge_tag(id, k, false)),
                                piece.src_rank);
        }
      }
      // Idle when the producer runs on other ranks only: this rank has nothing to run meanwhile.
      const bool idle = !s.ours(producer);
      for (auto& [work, source] : receives) {
        mark = s.wait(*work, trace::Lane::recv, idle, [&, source = source] {
          return std::make_pair(fmt::format("recv {} input ({}) from r{}", s.name(id), s.name(producer), source),
                                fmt::format("\"peer\": {}, \"waiting_for\": \"{}\"", source,
                                            trace::json_escape(s.name(producer))));
        });
      }
      torch::Tensor input = parts.size() == 1 ? parts[0] : torch::cat(parts, 0);
      if (carries_gradient(graph, producer)) input = input.detach().requires_grad_(true);
      inputs[static_cast<size_t>(id)].push_back(input);
      args.push_back(input);
    }
    if (is_loss(graph, id)) args.push_back(batch.labels(id, mine.begin, mine.end));
    torch::Tensor output;
    if (layers::SyncBatchNormContext* batchnorm = s.batchnorm[static_cast<size_t>(id)].get()) {
      const auto& attrs = std::get<graph::BatchNorm2dAttrs>(graph.layer(id).attrs);
      output = layers::sync_batchnorm_forward(args.at(0), s.modules[static_cast<size_t>(id)]->module(), attrs.eps,
                                      attrs.momentum, *batchnorm);
    } else {
      output = s.modules[static_cast<size_t>(id)]->forward(args);
    }
    if (is_loss(graph, id)) loss_sum += output.detach().sum();
    outputs[static_cast<size_t>(id)] = output;
    // Hand our rows to the consumers' other ranks.
    for (const auto& [consumer, k] : s.uses[static_cast<size_t>(id)]) {
      for (const cost::Transfer& t : s.edge(id, consumer)) {
        if (t.src_rank != s.rank || t.local()) continue;
        torch::Tensor rows = output.detach().narrow(0, t.samples.begin - mine.begin, t.samples.size()).contiguous();
        auto work = s.comm.send(rows, t.dst_rank, edge_tag(consumer, k, false));
        sends.push_back(PendingSend{std::move(rows), std::move(work), id, consumer, t.dst_rank, false});
      }
    }
    s.compute_event(mark, id, "forward");
  }

  // ---- backward, in reverse graph order; all-reduces start as layers finish ----
  const double inverse_batch = 1.0 / static_cast<double>(s.plan.global_batch);
  struct Sync {
    graph::LayerId layer;
    torch::Tensor flat;
    std::vector<torch::Tensor> gradients;
    std::unique_ptr<PendingWork> work;
  };
  std::vector<Sync> syncs;
  for (graph::LayerId id = layer_count - 1; id >= 0; --id) {
    if (!s.ours(id)) continue;
    s.current_layer = id;
    mark = Clock::now();
    const cost::SampleRange mine = s.range(id);
    torch::Tensor& output = outputs[static_cast<size_t>(id)];
    torch::Tensor gradient;
    // The sum of the pieces, each [rows of `mine`], in the order they come (the same sums as
    // adding them all into zeros: 0 + x == x). A piece covering all of `mine` is used as it is
    // when it comes first, and added out of place to the first one when it comes second; only
    // partial pieces need a zeroed tensor of our own.
    bool gradient_is_ours = false;
    auto add_piece = [&](const cost::SampleRange& rows_range, const torch::Tensor& rows) {
      const bool whole = rows_range.begin == mine.begin && rows_range.end == mine.end;
      if (!gradient.defined() && whole) {
        gradient = rows;
        return;
      }
      if (!gradient_is_ours && whole) {
        gradient = gradient + rows;
        gradient_is_ours = true;
        return;
      }
      if (!gradient_is_ours) {
        torch::Tensor sum = torch::zeros_like(output);
        if (gradient.defined()) sum += gradient;
        gradient = sum;
        gradient_is_ours = true;
      }
      gradient.narrow(0, rows_range.begin - mine.begin, rows_range.size()) += rows;
    };
    if (is_loss(graph, id)) {
      gradient = torch::full_like(output, inverse_batch);
    } else if (carries_gradient(graph, id)) {
      for (const auto& [consumer, k] : s.uses[static_cast<size_t>(id)]) {
        // The reverse of the forward pieces: each consumer rank returns our rows' gradient.
        for (const cost::Transfer& t : s.edge(id, consumer)) {
          if (t.src_rank != s.rank) continue;
          torch::Tensor rows;
          if (t.local()) {
            const torch::Tensor& leaf = inputs[static_cast<size_t>(consumer)][k];
            if (!leaf.grad().defined()) continue;
            rows = leaf.grad().narrow(0, t.samples.begin - s.range(consumer).begin, t.samples.size());
          } else {
            rows = empty_rows(graph, id, t.samples.size());
            auto work = s.comm.receive(rows, t.dst_rank, edge_tag(consumer, k, true));
            // Idle when the consumer runs on other ranks only.
            mark = s.wait(*work, trace::Lane::recv, !s.ours(consumer), [&] {
              return std::make_pair(
                  fmt::format("recv {} gradient (from {}) from r{}", s.name(id), s.name(consumer), t.dst_rank),
                  fmt::format("\"peer\": {}, \"bytes\": {}, \"waiting_for\": \"{}\"", t.dst_rank, rows.nbytes(),
                              trace::json_escape(s.name(consumer))));
            });
          }
          add_piece(t.samples, rows);
        }
      }
      if (!gradient.defined()) gradient = torch::zeros_like(output);  // no consumer gave one
    }
    if (gradient.defined() && output.requires_grad()) torch::autograd::backward({output}, {gradient});
    // Send each input's gradient rows back to the producer's other ranks.
    const auto& producers = graph.inputs(id);
    for (size_t k = 0; k < producers.size(); ++k) {
      if (!carries_gradient(graph, producers[k])) continue;
      torch::Tensor leaf_gradient = inputs[static_cast<size_t>(id)][k].grad();
      for (const cost::Transfer& t : s.edge(producers[k], id)) {
        if (t.dst_rank != s.rank || t.local()) continue;
        torch::Tensor rows = leaf_gradient.defined()
                                 ? leaf_gradient.narrow(0, t.samples.begin - mine.begin, t.samples.size()).contiguous()
                                 : empty_rows(graph, producers[k], t.samples.size()).zero_();
        auto work = s.comm.send(rows, t.src_rank, edge_tag(id, k, true));
        sends.push_back(PendingSend{std::move(rows), std::move(work), producers[k], id, t.src_rank, true});
      }
    }
    const std::vector<int>& group = s.groups[static_cast<size_t>(id)];
    if (!group.empty()) {
      Sync sync;
      sync.layer = id;
      for (torch::Tensor p : s.modules[static_cast<size_t>(id)]->parameters()) {
        if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);  // the sum lands in .grad
        sync.gradients.push_back(p.grad());
      }
      std::vector<torch::Tensor> flat_list;
      for (const torch::Tensor& g : sync.gradients) flat_list.push_back(g.reshape({-1}));
      sync.flat = torch::cat(flat_list);
      std::vector<torch::Tensor> buffers{sync.flat};
      sync.work = s.comm.allreduce_sum(buffers, group);
      syncs.push_back(std::move(sync));
    }
    s.compute_event(mark, id, "backward");
  }
  for (Sync& sync : syncs) {
    s.wait(*sync.work, trace::Lane::allreduce, false, [&] {
      return std::make_pair(fmt::format("{} gradient all-reduce", s.name(sync.layer)),
                            fmt::format("\"ranks\": {}, \"bytes\": {}", s.groups[static_cast<size_t>(sync.layer)].size(),
                                        sync.flat.nbytes()));
    });
    int64_t offset = 0;
    for (torch::Tensor& g : sync.gradients) {
      g.copy_(sync.flat.narrow(0, offset, g.numel()).view_as(g));
      offset += g.numel();
    }
  }
  for (PendingSend& send : sends) {
    s.wait(*send.work, trace::Lane::send, false, [&] {
      return peer_args(send.backward ? fmt::format("send {} gradient (from {}) to r{}", s.name(send.producer),
                                                   s.name(send.consumer), send.peer)
                                     : fmt::format("send {} input ({}) to r{}", s.name(send.consumer),
                                                   s.name(send.producer), send.peer),
                       send.peer, send.rows);
    });
  }
  if (s.optimizer) {
    // Parameters no backward reached (unused) are updated with a zero gradient, as after
    // zero_grad(): momentum and weight decay still apply to them.
    for (auto& group : s.optimizer->param_groups()) {
      for (torch::Tensor& p : group.params()) {
        if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      }
    }
    mark = Clock::now();
    s.optimizer->step();
    s.compute_event(mark, std::nullopt, "optimizer step");
  }

  // The step's end: this rank's work is done; the wait for the others counts as idle.
  std::vector<torch::Tensor> loss{loss_sum};
  auto loss_work = s.comm.allreduce_sum_world(loss);
  const auto end = s.wait(*loss_work, trace::Lane::allreduce, true,
                          [&] { return no_args("step end: loss all-reduce (waiting for all ranks)"); });

  StepResult result;
  result.loss = loss[0].item<double>() * inverse_batch;
  result.times.total_ms = std::chrono::duration<double, std::milli>(end - start).count();
  result.times.communication_ms = s.communication_ms;
  result.times.idle_ms = s.idle_ms;
  result.times.compute_ms = std::max(0.0, result.times.total_ms - s.communication_ms - s.idle_ms);
  if (s.trace.recording()) {
    s.trace.add(trace::Lane::step, start, end, fmt::format("step {}", s.trace.current_step()),
                fmt::format("\"loss\": {:.6g}, \"compute_ms\": {:.3f}, \"communication_ms\": {:.3f}, \"idle_ms\": {:.3f}",
                            result.loss, result.times.compute_ms, result.times.communication_ms,
                            result.times.idle_ms));
  }
  s.trace.end_step();
  return result;
}

std::vector<StepTimes> PlanExecutor::gather_step_times(const StepTimes& mine) {
  State& s = *state_;
  const int world = s.comm.size();
  torch::Tensor table = torch::zeros({world, 6}, torch::kFloat64);
  auto row = table.accessor<double, 2>();
  row[s.rank][0] = mine.compute_ms;
  row[s.rank][1] = mine.communication_ms;
  row[s.rank][2] = mine.idle_ms;
  row[s.rank][3] = mine.total_ms;
  row[s.rank][4] = mine.background_samples;
  row[s.rank][5] = mine.background_cpu_ms;
  std::vector<torch::Tensor> buffers{table};
  s.comm.allreduce_sum_world(buffers)->wait();
  std::vector<StepTimes> all(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    all[static_cast<size_t>(r)] = StepTimes{row[r][0], row[r][1], row[r][2], row[r][3], row[r][4], row[r][5]};
  }
  return all;
}

void PlanExecutor::trace_background(const std::vector<std::pair<Clock::time_point, Clock::time_point>>& steps) {
  for (const auto& [begin, end] : steps) state_->trace.add_in_window(trace::Lane::background, begin, end, "background step");
}

void PlanExecutor::start_trace(int64_t steps) {
  State& s = *state_;
  s.comm.barrier();
  s.trace.start(Clock::now(), steps);
}

std::string PlanExecutor::gather_trace(std::vector<int64_t>* events_per_rank) {
  State& s = *state_;
  const int world = s.comm.size();
  std::string mine = s.trace.events_json(s.rank);
  const auto my_count = static_cast<int64_t>(s.trace.size());
  if (s.rank != 0) {
    torch::Tensor header = torch::tensor({static_cast<int64_t>(mine.size()), my_count}, torch::kInt64);
    torch::Tensor bytes = torch::empty({static_cast<int64_t>(mine.size())}, torch::kUInt8);
    std::memcpy(bytes.data_ptr<uint8_t>(), mine.data(), mine.size());
    auto header_work = s.comm.send(header, 0, kTraceSizeTag);
    auto bytes_work = s.comm.send(bytes, 0, kTraceBytesTag);
    header_work->wait();
    bytes_work->wait();
    return {};
  }
  std::vector<std::string> fragments{std::move(mine)};
  if (events_per_rank) *events_per_rank = {my_count};
  for (int source = 1; source < world; ++source) {
    torch::Tensor header = torch::empty({2}, torch::kInt64);
    s.comm.receive(header, source, kTraceSizeTag)->wait();
    const int64_t size = header[0].item<int64_t>();
    torch::Tensor bytes = torch::empty({size}, torch::kUInt8);
    s.comm.receive(bytes, source, kTraceBytesTag)->wait();
    fragments.emplace_back(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()), static_cast<size_t>(size));
    if (events_per_rank) events_per_rank->push_back(header[1].item<int64_t>());
  }
  const std::string other = fmt::format(
      "\"model\": \"{}\", \"ranks\": {}, \"steps_traced\": {}, \"global_batch\": {}, "
      "\"clock\": \"steady_clock, microseconds since a barrier before the first traced step\"",
      trace::json_escape(s.graph.name()), world, s.trace.steps_recorded(), s.plan.global_batch);
  return trace::chrome_trace(fragments, other);
}

std::vector<std::pair<std::string, torch::Tensor>> PlanExecutor::local_parameters() const {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (size_t id = 0; id < state_->modules.size(); ++id) {
    if (!state_->modules[id]) continue;
    for (const auto& item : state_->modules[id]->module().named_parameters()) {
      named.emplace_back(state_->graph.layer(static_cast<graph::LayerId>(id)).name + "." + item.key(),
                         item.value());
    }
  }
  return named;
}

namespace {

// A module's parameters, then its buffers (BatchNorm's running statistics), by name.
std::vector<std::pair<std::string, torch::Tensor>> named_state(const torch::nn::Module& module) {
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (const auto& item : module.named_parameters()) state.emplace_back(item.key(), item.value());
  for (const auto& item : module.named_buffers()) state.emplace_back(item.key(), item.value());
  return state;
}

}  // namespace

std::vector<std::pair<std::string, torch::Tensor>> PlanExecutor::gather_parameters() {
  State& s = *state_;
  std::vector<std::pair<std::string, torch::Tensor>> gathered;
  std::vector<std::pair<torch::Tensor, std::unique_ptr<PendingWork>>> sends;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(s.graph.size()); ++id) {
    const int owner = s.plan.layers[static_cast<size_t>(id)].shards.front().rank;
    if (s.rank == owner && s.rank != 0) {
      size_t index = 0;
      for (const auto& [name, tensor] : named_state(s.modules[static_cast<size_t>(id)]->module())) {
        torch::Tensor copy = tensor.detach().contiguous();
        auto work = s.comm.send(copy, 0, gather_tag(id, index++));
        sends.emplace_back(std::move(copy), std::move(work));
      }
    }
    if (s.rank != 0) continue;
    const std::string prefix = s.graph.layer(id).name + ".";
    if (owner == 0) {
      for (const auto& [name, tensor] : named_state(s.modules[static_cast<size_t>(id)]->module())) {
        gathered.emplace_back(prefix + name, tensor.detach().clone());
      }
      continue;
    }
    // Shapes and names from a stand-in module; the values come from the owner.
    const auto stand_in = layers::make_layer_module(s.graph, id);
    size_t index = 0;
    for (const auto& [name, tensor] : named_state(stand_in->module())) {
      torch::Tensor value = torch::empty_like(tensor).contiguous();
      s.comm.receive(value, owner, gather_tag(id, index++))->wait();
      gathered.emplace_back(prefix + name, value);
    }
  }
  for (auto& [tensor, work] : sends) work->wait();
  return gathered;
}

std::vector<checkpoint::TensorBytes> PlanExecutor::gather_training_state() {
  State& s = *state_;
  // Each layer's state travels as one encoded block (checkpoint_file.h's format without a
  // model): its size, then its bytes, under the layer's last two gathering tags.
  constexpr size_t kSizeSlot = 62, kBytesSlot = 63;
  std::vector<checkpoint::TensorBytes> gathered;
  std::vector<std::pair<torch::Tensor, std::unique_ptr<PendingWork>>> sends;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(s.graph.size()); ++id) {
    const int owner = s.plan.layers[static_cast<size_t>(id)].shards.front().rank;
    const std::string prefix = s.graph.layer(id).name + ".";
    if (s.rank == owner) {
      std::vector<checkpoint::TensorBytes> mine =
          detail::layer_training_state(s.modules[static_cast<size_t>(id)]->module(), s.optimizer.get(), prefix);
      if (s.rank == 0) {
        for (auto& tensor : mine) gathered.push_back(std::move(tensor));
        continue;
      }
      checkpoint::Checkpoint block;
      block.tensors = std::move(mine);
      const std::string bytes = checkpoint::encode_checkpoint(block);
      torch::Tensor size = torch::tensor({static_cast<int64_t>(bytes.size())}, torch::kInt64);
      torch::Tensor payload = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
      std::memcpy(payload.data_ptr(), bytes.data(), bytes.size());
      sends.emplace_back(size, s.comm.send(size, 0, gather_tag(id, kSizeSlot)));
      sends.emplace_back(payload, s.comm.send(payload, 0, gather_tag(id, kBytesSlot)));
      continue;
    }
    if (s.rank != 0) continue;
    torch::Tensor size = torch::empty({1}, torch::kInt64);
    s.comm.receive(size, owner, gather_tag(id, kSizeSlot))->wait();
    torch::Tensor payload = torch::empty({size.item<int64_t>()}, torch::kUInt8);
    s.comm.receive(payload, owner, gather_tag(id, kBytesSlot))->wait();
    checkpoint::Checkpoint block = checkpoint::decode_checkpoint(
        std::string(static_cast<const char*>(payload.data_ptr()), static_cast<size_t>(payload.numel())));
    for (auto& tensor : block.tensors) gathered.push_back(std::move(tensor));
  }
  for (auto& [tensor, work] : sends) work->wait();
  return gathered;
}

void PlanExecutor::load_training_state(const std::vector<checkpoint::TensorBytes>& state) {
  State& s = *state_;
  std::map<std::string, const checkpoint::TensorBytes*> by_name;
  for (const checkpoint::TensorBytes& tensor : state) by_name[tensor.name] = &tensor;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(s.graph.size()); ++id) {
    if (!s.ours(id)) continue;
    detail::load_layer_training_state(s.modules[static_cast<size_t>(id)]->module(), s.optimizer.get(),
                                      s.graph.layer(id).name + ".", by_name);
  }
}

std::vector<torch::Tensor> PlanExecutor::gather_generator_states() {
  State& s = *state_;
  torch::Tensor mine = at::detail::getDefaultCPUGenerator().get_state();
  if (s.rank != 0) {
    s.comm.send(mine, 0, kGeneratorTag)->wait();
    return {};
  }
  std::vector<torch::Tensor> states{mine};
  for (int rank = 1; rank < s.comm.size(); ++rank) {
    torch::Tensor other = torch::empty_like(mine);
    s.comm.receive(other, rank, kGeneratorTag)->wait();
    states.push_back(other);
  }
  return states;
}

}  // namespace burst::runtime
