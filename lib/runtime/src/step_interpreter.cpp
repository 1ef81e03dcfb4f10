#include "step_interpreter.h"

#include <algorithm>
#include <cmath>

#include <torch/autograd.h>

#include "autocast_scope.h"
#include "gradient_norm.h"

namespace burst::runtime::detail {
namespace {

using program::Op;
using program::OpKind;
using program::Piece;

bool is_loss(const graph::Graph& graph, graph::LayerId id) {
  return graph.layer(id).op() == graph::OpKind::SoftmaxCrossEntropy;
}

// A block of `layer`'s output: `rows` samples x `features` of its last axis (all of it but
// under tensor splits); floating point outputs in `floating` (the run's dtype).
torch::Tensor empty_block(const graph::Graph& graph, graph::LayerId layer, int64_t rows, int64_t features,
                          torch::Dtype floating, torch::Device device) {
  std::vector<int64_t> shape{rows};
  for (const int64_t d : graph.info(layer).output_shape) shape.push_back(d);
  if (shape.size() > 1) shape.back() = features;
  const auto dtype = graph.info(layer).output_dtype == graph::DType::Int64 ? torch::kInt64 : floating;
  return torch::empty(shape, torch::TensorOptions().dtype(dtype).device(device));
}

// Samples x features of a layer's output or input (cost::Block without the rank).
struct Area {
  cost::SampleRange samples;
  cost::FeatureRange features;
  bool operator==(const Area& other) const { return samples == other.samples && features == other.features; }
};

// The part `area` of `tensor`, which holds `held` (batch-first, features on the last axis).
torch::Tensor area_of(const torch::Tensor& tensor, const Area& held, const Area& area) {
  torch::Tensor rows = tensor.narrow(0, area.samples.begin - held.samples.begin, area.samples.size());
  if (area.features == held.features) return rows;
  return rows.narrow(-1, area.features.begin - held.features.begin, area.features.size());
}

// The gradient of one layer's output on this rank (its area `mine`): the sum of the pieces
// its consumers return, in the order they come (the same sums as adding them all into
// zeros: 0 + x == x). A piece covering all of `mine` is used as it is when it comes first,
// and added out of place when it comes second; only partial pieces need zeroed memory.
class GradientSum {
 public:
  void add(const Area& mine, const Area& rows_range, const torch::Tensor& rows, const torch::Tensor& like) {
    const bool whole = rows_range == mine;
    if (!sum_.defined() && whole) {
      sum_ = rows;
      return;
    }
    if (!owned_ && whole) {
      sum_ = sum_ + rows;
      owned_ = true;
      return;
    }
    if (!owned_) {
      // In the gradients' dtype (the run's: a 16-bit output's gradient sums in it too).
      torch::Tensor zeros = torch::zeros_like(like, rows.options());
      if (sum_.defined()) zeros += sum_;
      sum_ = zeros;
      owned_ = true;
    }
    area_of(sum_, mine, rows_range) += rows;
  }
  const torch::Tensor& value() const { return sum_; }

 private:
  torch::Tensor sum_;
  bool owned_ = false;
};

// A piece of a layer's input: its area and values.
struct InputPiece {
  Area area;
  torch::Tensor values;
};

// A layer input from its pieces, which tile it: concatenated when they hold all its
// features (pieces come by first sample), else each copied into place.
torch::Tensor assemble(std::vector<InputPiece>& pieces) {
  if (pieces.size() == 1) return pieces[0].values;
  Area whole = pieces[0].area;
  for (const InputPiece& piece : pieces) {
    whole.samples = {std::min(whole.samples.begin, piece.area.samples.begin),
                     std::max(whole.samples.end, piece.area.samples.end)};
    whole.features = {std::min(whole.features.begin, piece.area.features.begin),
                      std::max(whole.features.end, piece.area.features.end)};
  }
  if (std::all_of(pieces.begin(), pieces.end(), [&](const InputPiece& p) { return p.area.features == whole.features; })) {
    std::vector<torch::Tensor> rows;
    for (const InputPiece& piece : pieces) rows.push_back(piece.values);
    return torch::cat(rows, 0);
  }
  std::vector<int64_t> shape = pieces[0].values.sizes().vec();
  shape[0] = whole.samples.size();
  shape.back() = whole.features.size();
  torch::Tensor input = torch::empty(shape, pieces[0].values.options());
  for (const InputPiece& piece : pieces) area_of(input, whole, piece.area).copy_(piece.values);
  return input;
}

// A receive in flight: the piece and the tensor it lands in.
struct PendingReceive {
  int32_t piece;
  torch::Tensor rows;
  std::unique_ptr<PendingWork> work;
};

// A send in flight, kept until WAIT_SENDS (the tensor must outlive it).
struct PendingSend {
  int32_t piece;
  torch::Tensor rows;
  std::unique_ptr<PendingWork> work;
};

// What one micro-batch's forward leaves for its backward on this rank, by layer.
struct MicroBatchState {
  explicit MicroBatchState(const graph::Graph& graph)
      : outputs(graph.size()), leaves(graph.size()), parts(graph.size()), gradients(graph.size()) {
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
      leaves[static_cast<size_t>(id)].resize(graph.inputs(id).size());
      parts[static_cast<size_t>(id)].resize(graph.inputs(id).size());
    }
  }
  std::vector<torch::Tensor> outputs;                         // by layer, this rank's rows
  std::vector<std::vector<torch::Tensor>> leaves;              // by consumer, input position
  std::vector<std::vector<std::vector<InputPiece>>> parts;   // pieces of an input, in order
  std::vector<GradientSum> gradients;                          // by layer: of its output
};

class StepInterpreter {
 public:
  StepInterpreter(ExecutorState& s, const program::StepProgram& program, const BatchSource& batch,
                  const layers::RandomKey& step_key)
      : s_(s),
        step_key_(step_key),
        graph_(s.graph),
        program_(program),
        batch_(batch),
        micro_(static_cast<size_t>(program.micro_batches), MicroBatchState(graph_)),
        recomputed_(graph_.size(), 0) {
    // A layer this rank recomputes runs its first forward without recording autograd.
    for (const Op& op : program.ops[static_cast<size_t>(s.rank)]) {
      if (op.kind == OpKind::Recompute) recomputed_[static_cast<size_t>(op.layer)] = 1;
    }
  }

  double run() {
    // Drop last step's gradients instead of zeroing them: the first backward hands its result
    // to .grad instead of adding it to a zeroed copy. Unused parameters get zeros at UPDATE.
    if (s_.optimizer) {
      for (auto& group : s_.optimizer->param_groups()) {
        for (torch::Tensor& p : group.params()) p.mutable_grad() = torch::Tensor();
      }
    }
    s_.buckets->begin_step();
    for (const Op& op : program_.ops[static_cast<size_t>(s_.rank)]) execute(op);
    return loss_sum_;
  }

 private:
  const Piece& piece(const Op& op) const { return program_.pieces[static_cast<size_t>(op.piece)]; }
  MicroBatchState& micro(int32_t j) { return micro_[static_cast<size_t>(j)]; }
  // The global batch index of sample 0 of micro-batch j.
  int64_t first_sample(int32_t j) const { return program_.micro_batch * j; }
  bool internal(graph::LayerId producer, graph::LayerId consumer) const {
    return program_.segment_of[static_cast<size_t>(producer)] == program_.segment_of[static_cast<size_t>(consumer)];
  }
  // What this rank holds of `layer`'s output, and of `consumer`'s input `input`.
  Area output_area(graph::LayerId layer) const { return {s_.range(layer), s_.output_held[static_cast<size_t>(layer)]}; }
  Area input_area(graph::LayerId consumer, int32_t input) const {
    return {s_.range(consumer), s_.inputs_held[static_cast<size_t>(consumer)][static_cast<size_t>(input)]};
  }
  static Area area(const Piece& p) { return {p.samples, p.features}; }

  // A 16-bit activation (mixed precision) in the run's dtype, as messages carry it.
  torch::Tensor in_run_dtype(const torch::Tensor& values) const {
    return values.is_floating_point() && values.scalar_type() != s_.dtype ? values.to(s_.dtype) : values;
  }

  void execute(const Op& op) {
    switch (op.kind) {
      case OpKind::RecvActivation: return receive_activation(op);
      case OpKind::SendActivation: return send_activation(op);
      case OpKind::Forward: return forward(op.layer, op.micro);
      case OpKind::SyncBatchNorm: return;    // made inside the layer's F or B (sync_batchnorm.h)
      case OpKind::TensorAllReduce: return;  // likewise (layers/tensor_parallel.h)
      case OpKind::TensorReduceScatter:
      case OpKind::TensorAllGather:
        BURST_ASSERT(false, "sequence-parallel plans are refused before a step runs (plan_executor)");
        return;
      case OpKind::ContextRing:
        BURST_ASSERT(false, "context-parallel plans are refused before a step runs (plan_executor)");
        return;
      case OpKind::ExpertDispatch:
      case OpKind::ExpertCombine:
        BURST_ASSERT(false, "expert-parallel plans are refused before a step runs (plan_executor)");
        return;
      case OpKind::BackwardWeight:
        BURST_ASSERT(false, "ZB-H1 plans are refused before a step runs (plan_executor)");
        return;
      case OpKind::RecvGradient: return receive_gradient(op);
      case OpKind::SendGradient: return send_gradient(op);
      case OpKind::Backward: return backward(op.segment, op.micro);
      case OpKind::AllReduce: return s_.buckets->start(op.bucket);
      case OpKind::WaitAllReduce: return wait_bucket(op.bucket);
      case OpKind::Update: return update();
      case OpKind::ReduceLoss: return reduce_loss();
      case OpKind::WaitSends: return wait_sends();
      case OpKind::Recompute: return recompute(op.layer, op.micro);
      case OpKind::ReduceScatter: return s_.buckets->start(op.bucket);  // the bucket's, under ZeRO
      case OpKind::AllGather: return gather_bucket(op);
      case OpKind::ClipGradNorm: return clip_gradients(op);
    }
  }

  void receive_activation(const Op& op) {
    const Piece& p = piece(op);
    MicroBatchState& state = micro(p.micro);
    auto& parts = state.parts[static_cast<size_t>(p.consumer)][static_cast<size_t>(p.input)];
    if (p.local()) {
      parts.push_back(InputPiece{area(p), in_run_dtype(area_of(state.outputs[static_cast<size_t>(p.producer)].detach(),
                                                               output_area(p.producer), area(p)))});
      return;
    }
    parts.push_back(InputPiece{area(p), empty_block(graph_, p.producer, p.samples.size(), p.features.size(), s_.dtype, s_.device)});
    receives_.push_back(
        PendingReceive{op.piece, parts.back().values, s_.comm.receive(parts.back().values, p.sender, p.tag)});
  }

  // Waits for the receives posted so far (a layer's inputs, or a segment's gradients).
  void wait_receives() {
    for (PendingReceive& receive : receives_) {
      const Piece& p = program_.pieces[static_cast<size_t>(receive.piece)];
      // Idle when the other side's layer does not run here: this rank has nothing else to do.
      const graph::LayerId other = p.gradient ? p.consumer : p.producer;
      mark_ = s_.wait(*receive.work, trace::Lane::recv, !s_.ours(other), [&] {
        return std::make_pair(fmt::format("recv {} {} ({} -> {}) from r{}", p.gradient ? "gradient" : "input",
                                          s_.name(p.gradient ? p.producer : p.consumer), s_.name(p.producer),
                                          s_.name(p.consumer), p.sender),
                              fmt::format("\"peer\": {}, \"bytes\": {}, \"waiting_for\": \"{}\"", p.sender, p.bytes,
                                          trace::json_escape(s_.name(other))));
      });
      if (p.gradient) {
        MicroBatchState& state = micro(p.micro);
        state.gradients[static_cast<size_t>(p.producer)].add(output_area(p.producer), area(p), receive.rows,
                                                             state.outputs[static_cast<size_t>(p.producer)]);
      }
    }
    receives_.clear();
  }

  void send_activation(const Op& op) {
    const Piece& p = piece(op);
    torch::Tensor rows = in_run_dtype(
        area_of(micro(p.micro).outputs[static_cast<size_t>(p.producer)].detach(), output_area(p.producer), area(p))
            .contiguous());
    auto work = s_.comm.send(rows, p.receiver, p.tag);
    sends_.push_back(PendingSend{op.piece, std::move(rows), std::move(work)});
  }

  // The layer's arguments: inputs from its own segment as they are (one autograd graph);
  // others assembled from the received and copied pieces, as leaves when gradients flow back.
  std::vector<torch::Tensor> arguments(graph::LayerId id, int32_t j) {
    const cost::SampleRange mine = s_.range(id);
    const int64_t offset = first_sample(j);
    MicroBatchState& state = micro(j);
    std::vector<torch::Tensor> args;
    if (graph_.layer(id).op() == graph::OpKind::Input) {
      torch::Tensor features = batch_.features(id, offset + mine.begin, offset + mine.end);
      features = features.is_floating_point() ? features.to(s_.device, s_.dtype) : features.to(s_.device);
      args.push_back(features);
    }
    wait_receives();
    const auto& producers = graph_.inputs(id);
    for (size_t k = 0; k < producers.size(); ++k) {
      if (internal(producers[k], id)) {
        args.push_back(state.outputs[static_cast<size_t>(producers[k])]);
        continue;
      }
      auto& parts = state.parts[static_cast<size_t>(id)][k];
      torch::Tensor input = assemble(parts);
      parts.clear();
      if (program::carries_gradient(graph_, producers[k])) input = input.detach().requires_grad_(true);
      state.leaves[static_cast<size_t>(id)][k] = input;
      args.push_back(input);
    }
    if (is_loss(graph_, id)) args.push_back(batch_.labels(id, offset + mine.begin, offset + mine.end).to(s_.device));
    return args;
  }

  void forward(graph::LayerId id, int32_t j) {
    s_.current_layer = id;
    mark_ = Clock::now();
    const std::vector<torch::Tensor> args = arguments(id, j);
    torch::Tensor output;
    if (recomputed_[static_cast<size_t>(id)]) {
      torch::NoGradGuard no_autograd;  // RECOMPUTE runs it again before its backward
      output = run_layer(id, j, args);
    } else {
      output = run_layer(id, j, args);
    }
    // A loss computed by several parts of a sample group counts once.
    if (is_loss(graph_, id) && s_.part(id) == 0) loss_sum_ += output.detach().sum().item<double>();
    micro(j).outputs[static_cast<size_t>(id)] = output;
    s_.compute_event(mark_, id, "forward");
  }

  // The layer's forward on `args`; random ops draw by the step's key and the global sample,
  // so a recomputation draws the same masks.
  torch::Tensor run_layer(graph::LayerId id, int32_t j, const std::vector<torch::Tensor>& args) {
    const AutocastScope autocast(s_.precision, s_.device.type());
    if (graph_.layer(id).op() == graph::OpKind::BatchNorm2d) {
      // BatchNorm normalises in the run's dtype, as autocast's float32 ops do on a GPU.
      const torch::Tensor input = in_run_dtype(args.at(0));
      if (layers::SyncBatchNormContext* batchnorm = s_.batchnorm[static_cast<size_t>(id)].get()) {
        const auto& attrs = std::get<graph::BatchNorm2dAttrs>(graph_.layer(id).attrs);
        return layers::sync_batchnorm_forward(input, s_.modules[static_cast<size_t>(id)]->module(), attrs.eps,
                                              attrs.momentum, *batchnorm);
      }
      return s_.modules[static_cast<size_t>(id)]->forward({input}, step_key_);
    }
    layers::RandomKey key = step_key_;
    key.first_sample = first_sample(j) + s_.range(id).begin;  // row 0 of this rank's rows is that global sample
    if (s_.split(id).kind == cost::SplitKind::Features) {
      key.features = cost::output_features(graph_, id);  // a slice: draws by the whole sample's elements
      key.feature_begin = s_.output_held[static_cast<size_t>(id)].begin;
    }
    return s_.modules[static_cast<size_t>(id)]->forward(args, key);
  }

  // RECOMPUTE: the layer's forward again, recording autograd, from what its first forward
  // read: its unit's recomputed outputs, the leaves it assembled from other segments, the
  // batch. Its buffers (BatchNorm's running statistics) are kept as the first forward left
  // them, so the step updates them once, as one process does.
  void recompute(graph::LayerId id, int32_t j) {
    s_.current_layer = id;
    mark_ = Clock::now();
    MicroBatchState& state = micro(j);
    const cost::SampleRange mine = s_.range(id);
    const int64_t offset = first_sample(j);
    std::vector<torch::Tensor> args;
    if (graph_.layer(id).op() == graph::OpKind::Input) {
      torch::Tensor features = batch_.features(id, offset + mine.begin, offset + mine.end);
      args.push_back(features.is_floating_point() ? features.to(s_.device, s_.dtype) : features.to(s_.device));
    }
    const auto& producers = graph_.inputs(id);
    for (size_t k = 0; k < producers.size(); ++k) {
      args.push_back(internal(producers[k], id) ? state.outputs[static_cast<size_t>(producers[k])]
                                                : state.leaves[static_cast<size_t>(id)][k]);
    }
    if (is_loss(graph_, id)) args.push_back(batch_.labels(id, offset + mine.begin, offset + mine.end).to(s_.device));
    torch::nn::Module& module = s_.modules[static_cast<size_t>(id)]->module();
    std::vector<torch::Tensor> buffers;
    for (const torch::Tensor& buffer : module.buffers()) buffers.push_back(buffer.clone());
    state.outputs[static_cast<size_t>(id)] = run_layer(id, j, args);
    {
      torch::NoGradGuard no_autograd;
      size_t b = 0;
      for (torch::Tensor& buffer : module.buffers()) buffer.copy_(buffers[b++]);
    }
    s_.compute_event(mark_, id, "recompute");
  }

  void receive_gradient(const Op& op) {
    const Piece& p = piece(op);
    if (!p.local()) {
      torch::Tensor rows = empty_block(graph_, p.producer, p.samples.size(), p.features.size(), s_.dtype, s_.device);
      receives_.push_back(PendingReceive{op.piece, rows, s_.comm.receive(rows, p.sender, p.tag)});
      return;
    }
    MicroBatchState& state = micro(p.micro);
    const torch::Tensor& leaf = state.leaves[static_cast<size_t>(p.consumer)][static_cast<size_t>(p.input)];
    if (!leaf.grad().defined()) return;  // the consumer's backward gave none (zero)
    state.gradients[static_cast<size_t>(p.producer)].add(output_area(p.producer), area(p),
                                                         area_of(leaf.grad(), input_area(p.consumer, p.input), area(p)),
                                                         state.outputs[static_cast<size_t>(p.producer)]);
  }

  // The segment's backward of micro-batch j, once, at its first B op: one autograd call from
  // every output that has a gradient (the loss's 1/B of the global batch, or the sum its
  // consumers returned). Gradients of parameters add up over the micro-batches. Then the
  // segment's outputs and their gradients for j are dropped (its inputs' leaves stay until
  // their gradients are sent or copied).
  void backward(int32_t segment, int32_t j) {
    if (std::make_pair(segment, j) == last_backward_) return;
    last_backward_ = {segment, j};
    MicroBatchState& state = micro(j);
    const program::Segment& layers = program_.segments[static_cast<size_t>(segment)];
    s_.current_layer = layers.layers.back();
    mark_ = Clock::now();
    wait_receives();
    std::vector<torch::Tensor> roots, gradients;
    const double inverse_batch = 1.0 / static_cast<double>(s_.plan.global_batch);
    for (const graph::LayerId id : layers.layers) {
      const torch::Tensor& output = state.outputs[static_cast<size_t>(id)];
      if (!output.defined() || !output.requires_grad()) continue;
      torch::Tensor gradient = is_loss(graph_, id) ? torch::full_like(output, inverse_batch)
                                                   : state.gradients[static_cast<size_t>(id)].value();
      if (!gradient.defined()) continue;
      if (gradient.scalar_type() != output.scalar_type()) gradient = gradient.to(output.scalar_type());
      roots.push_back(output);
      gradients.push_back(gradient);
    }
    if (!roots.empty()) torch::autograd::backward(roots, gradients);
    for (const graph::LayerId id : layers.layers) {
      state.outputs[static_cast<size_t>(id)] = torch::Tensor();
      state.gradients[static_cast<size_t>(id)] = GradientSum();
    }
    s_.compute_event(mark_, std::nullopt,
                     fmt::format("segment {} ({}..{}) backward", segment, s_.name(layers.layers.front()),
                                 s_.name(layers.layers.back())));
  }

  void send_gradient(const Op& op) {
    const Piece& p = piece(op);
    const torch::Tensor& leaf = micro(p.micro).leaves[static_cast<size_t>(p.consumer)][static_cast<size_t>(p.input)];
    torch::Tensor rows =
        leaf.grad().defined()
            ? area_of(leaf.grad(), input_area(p.consumer, p.input), area(p)).contiguous()
            : empty_block(graph_, p.producer, p.samples.size(), p.features.size(), s_.dtype, s_.device).zero_();
    auto work = s_.comm.send(rows, p.receiver, p.tag);
    sends_.push_back(PendingSend{op.piece, std::move(rows), std::move(work)});
  }

  void wait_bucket(int32_t bucket) {
    s_.buckets->finish(bucket, [&](PendingWork& work) {
      s_.wait(work, trace::Lane::allreduce, false, [&] {
        return std::make_pair(fmt::format("gradient bucket {} all-reduce", bucket),
                              fmt::format("\"bytes\": {}", s_.buckets->bytes(bucket)));
      });
    });
  }

  // ZeRO 1 and 2: a bucket's updated shards back into its parameters (the executor refuses
  // stage 3, whose ALL_GATHERs are a layer's).
  void gather_bucket(const Op& op) {
    BURST_ASSERT(op.bucket >= 0, "the runtime gathers buckets, not layers (ZeRO 3)");
    s_.buckets->gather(op.bucket, [&](PendingWork& work) {
      s_.wait(work, trace::Lane::allreduce, false, [&] {
        return std::make_pair(fmt::format("gradient bucket {} weight all-gather", op.bucket),
                              fmt::format("\"bytes\": {}", s_.buckets->bytes(op.bucket)));
      });
    });
  }

  // The global norm of the step's gradients (gradient_norm.h), summed over the world; the
  // gradients scaled to it. A non-finite norm leaves them, and UPDATE skips the step: the
  // run stops after it (train.cpp), the weights as they were.
  void clip_gradients(const Op& op) {
    mark_ = Clock::now();
    std::vector<torch::Tensor> sum{torch::tensor({local_squared_gradient_norm(s_)}, torch::kFloat64)};
    s_.compute_event(mark_, std::nullopt, "gradient norm");
    if (op.group >= 0) {
      auto work = s_.comm.allreduce_sum_world(sum);
      s_.wait(*work, trace::Lane::allreduce, false,
              [] { return std::make_pair(std::string("gradient norm all-reduce"), std::string("\"bytes\": 8")); });
    }
    s_.gradient_norm = std::sqrt(sum[0].item<double>());
    if (!std::isfinite(s_.gradient_norm) || !s_.optimizer) return;
    const double factor = clip_factor(s_.clip_grad_norm, s_.gradient_norm);
    if (factor >= 1) return;  // torch multiplies by 1: the same gradients
    mark_ = Clock::now();
    scale_gradients(*s_.optimizer, factor);
    s_.compute_event(mark_, std::nullopt, "gradient clipping");
  }

  void update() {
    if (!std::isfinite(s_.gradient_norm)) return;  // NaN only when clipping found it so
    // Parameters no backward reached (unused) are updated with a zero gradient, as after
    // zero_grad(): momentum and weight decay still apply to them.
    for (auto& group : s_.optimizer->param_groups()) {
      for (torch::Tensor& p : group.params()) {
        if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      }
    }
    mark_ = Clock::now();
    s_.optimizer->step();
    s_.compute_event(mark_, std::nullopt, "optimizer step");
  }

  // This rank's work is done; the wait for the others counts as idle.
  void reduce_loss() {
    std::vector<torch::Tensor> loss{torch::tensor({loss_sum_}, torch::kFloat64)};
    auto work = s_.comm.allreduce_sum_world(loss);
    s_.wait(*work, trace::Lane::allreduce, true,
            [] { return std::make_pair(std::string("loss all-reduce (waiting for all ranks)"), std::string()); });
    loss_sum_ = loss[0].item<double>();
  }

  void wait_sends() {
    for (PendingSend& send : sends_) {
      const Piece& p = program_.pieces[static_cast<size_t>(send.piece)];
      s_.wait(*send.work, trace::Lane::send, false, [&] {
        return std::make_pair(fmt::format("send {} ({} -> {}) to r{}", p.gradient ? "gradient" : "input",
                                          s_.name(p.producer), s_.name(p.consumer), p.receiver),
                              fmt::format("\"peer\": {}, \"bytes\": {}", p.receiver, p.bytes));
      });
    }
    sends_.clear();
  }

  ExecutorState& s_;
  const layers::RandomKey step_key_;
  const graph::Graph& graph_;
  const program::StepProgram& program_;
  const BatchSource& batch_;
  std::vector<MicroBatchState> micro_;  // by micro-batch
  std::vector<PendingReceive> receives_;
  std::vector<PendingSend> sends_;
  std::pair<int32_t, int32_t> last_backward_{-1, -1};  // (segment, micro-batch)
  std::vector<char> recomputed_;  // by layer: this rank recomputes it (its first forward records no autograd)
  double loss_sum_ = 0;
  Clock::time_point mark_;  // where the current compute event starts
};

}  // namespace

double interpret_step(ExecutorState& s, const program::StepProgram& program, const BatchSource& batch,
                      const layers::RandomKey& step_key) {
  return StepInterpreter(s, program, batch, step_key).run();
}

}  // namespace burst::runtime::detail
