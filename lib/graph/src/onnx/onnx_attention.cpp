// Sequence-first tensors. torch 1.13 exports nn.MultiheadAttention (batch_first=False, as
// torchvision's ViT calls it) as: x [B, T, D] -> Transpose [T, B, D] -> MatMul + Add (the
// packed Q/K/V projection) -> three Slices -> Reshape [T, B * heads, d] -> Transpose ->
// scale, MatMul, Softmax, MatMul -> Transpose -> Reshape [T * B, D] -> Gemm (out_proj) ->
// Reshape [T, B, D] -> Transpose [B, T, D]. In between, the batch is not the first dim and
// is merged with the heads, which no per-sample burst layer can hold. The importer follows
// those tensors as Traces (whole shapes, the batch as a SymbolicInt) and, when a Transpose
// puts the batch first again, checks the traced computation against this exact pattern and
// appends one self_attention layer. Anything else that moves the batch is refused.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "onnx/onnx_attributes.h"
#include "onnx/onnx_lowering.h"

namespace burst::graph::onnx_import {
namespace {

using TracePtr = std::shared_ptr<const Trace>;

const SymbolicInt kBatch{1, 0};

// The element count of a shape whose batch-dependent dims are one k * batch at most.
std::optional<SymbolicInt> element_count(const std::vector<SymbolicInt>& shape) {
  SymbolicInt count = fixed(1);
  for (const SymbolicInt& dim : shape) {
    if (dim.batch != 0) {
      if (dim.constant != 0 || count.batch != 0) return std::nullopt;
      count = SymbolicInt{count.constant * dim.batch, 0};
    } else {
      count = SymbolicInt{count.batch * dim.constant, count.constant * dim.constant};
    }
  }
  return count;
}

// x / y for element counts, if it is a whole fixed size or k * batch.
std::optional<SymbolicInt> divide(const SymbolicInt& x, const SymbolicInt& y) {
  if (x.constant != 0 && x.batch != 0) return std::nullopt;
  if (y.batch != 0) {
    if (y.constant != 0 || x.batch == 0 || x.batch % y.batch != 0) return std::nullopt;
    return fixed(x.batch / y.batch);
  }
  if (y.constant <= 0) return std::nullopt;
  if (x.batch != 0) return x.batch % y.constant == 0 ? std::optional(SymbolicInt{x.batch / y.constant, 0}) : std::nullopt;
  return x.constant % y.constant == 0 ? std::optional(fixed(x.constant / y.constant)) : std::nullopt;
}

bool only_batch_first(const std::vector<SymbolicInt>& shape) {
  if (shape.empty() || !(shape[0] == kBatch)) return false;
  for (size_t d = 1; d < shape.size(); ++d) {
    if (shape[d].batch != 0) return false;
  }
  return true;
}

}  // namespace

bool Lowering::reads_trace(const onnx::NodeProto& node) const {
  for (const std::string& name : node.input()) {
    const auto found = values_.find(name);
    if (found != values_.end() && found->second.trace) return true;
  }
  return false;
}

void Lowering::bind_trace(const std::string& tensor, Trace trace) {
  Value value;
  value.trace = std::make_shared<const Trace>(std::move(trace));
  values_[tensor] = std::move(value);
}

namespace {

std::vector<SymbolicInt> permuted(const std::vector<SymbolicInt>& shape, const std::vector<int64_t>& perm) {
  std::vector<SymbolicInt> result;
  for (const int64_t axis : perm) result.push_back(shape.at(static_cast<size_t>(axis)));
  return result;
}

bool is_permutation(std::vector<int64_t> perm) {
  std::sort(perm.begin(), perm.end());
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

}  // namespace

void Lowering::trace_transpose(const onnx::NodeProto& node, const std::vector<int64_t>& perm) {
  const std::string x = layer_input(node, 0);
  if (!is_permutation(perm)) fail(node, fmt::format("perm {} is not a permutation", fmt::join(perm, ",")));
  std::vector<SymbolicInt> shape{kBatch};
  for (const int64_t dim : info_of(x).output_shape) shape.push_back(fixed(dim));
  Trace start;
  start.op = Trace::Op::Start;
  start.shape = permuted(shape, perm);
  start.layer = x;
  start.perm = perm;
  start.node = node.name();
  bind_trace(node.output(0), std::move(start));
}

namespace {

// The nodes a trace goes through, each building one Trace from its inputs' (trace_op).
class TraceBuilder {
 public:
  TraceBuilder(const onnx::NodeProto& node, std::function<void(const std::string&)> fail)
      : node_(node), fail_(std::move(fail)) {}

  Trace transpose(const TracePtr& x, std::vector<int64_t> perm) const {
    if (perm.empty()) {
      for (auto i = static_cast<int64_t>(x->shape.size()) - 1; i >= 0; --i) perm.push_back(i);
    }
    if (perm.size() != x->shape.size() || !is_permutation(perm)) {
      fail_(fmt::format("perm {} does not permute {}", fmt::join(perm, ","), symbolic_text(x->shape)));
    }
    Trace result = make(Trace::Op::Transpose, {x}, permuted(x->shape, perm));
    result.perm = perm;
    if (x->op == Trace::Op::Transpose) {  // two transposes in a row are one
      result.inputs = x->inputs;
      for (int64_t& axis : result.perm) axis = x->perm[static_cast<size_t>(axis)];
    }
    return result;
  }

  Trace linear(const TracePtr& x, ConstantTensor& weight, bool as_torch) const {
    if (weight.dims.size() != 2) fail_("multiplies by a constant that is not a matrix");
    const int64_t in = as_torch ? weight.dims[1] : weight.dims[0];
    const int64_t out = as_torch ? weight.dims[0] : weight.dims[1];
    if (!(x->shape.back() == fixed(in))) {
      fail_(fmt::format("a [{}, {}] weight does not fit {}", in, out, symbolic_text(x->shape)));
    }
    std::vector<SymbolicInt> shape = x->shape;
    shape.back() = fixed(out);
    Trace result = make(Trace::Op::Linear, {x}, shape);
    result.weight = &weight;
    result.weight_as_torch = as_torch;
    return result;
  }

  Trace with_bias(const TracePtr& linear, ConstantTensor& bias) const {
    if (linear->op != Trace::Op::Linear || linear->bias != nullptr || bias.dims.size() != 1 ||
        !(fixed(bias.element_count()) == linear->shape.back())) {
      fail_("adds a constant that is not the bias [out] of the MatMul before it");
    }
    Trace result = *linear;
    result.bias = &bias;
    result.node = node_.name();
    return result;
  }

  Trace batched_matmul(const TracePtr& a, const TracePtr& b) const {
    const size_t rank = a->shape.size();
    bool fits = rank >= 3 && b->shape.size() == rank && a->shape[rank - 1] == b->shape[rank - 2];
    for (size_t d = 0; fits && d + 2 < rank; ++d) fits = a->shape[d] == b->shape[d];
    if (!fits) fail_(fmt::format("multiplies {} by {}; burst reads batched products of one batch only", symbolic_text(a->shape), symbolic_text(b->shape)));
    std::vector<SymbolicInt> shape = a->shape;
    shape.back() = b->shape.back();
    return make(Trace::Op::MatMul, {a, b}, shape);
  }

  Trace slice(const TracePtr& x, int64_t axis, int64_t start, int64_t end) const {
    const auto rank = static_cast<int64_t>(x->shape.size());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank || x->shape[static_cast<size_t>(axis)].batch != 0) {
      fail_(fmt::format("slices axis {} of {}; burst slices fixed dims only", axis, symbolic_text(x->shape)));
    }
    const int64_t size = x->shape[static_cast<size_t>(axis)].constant;
    const auto clamp = [size](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size); };
    std::vector<SymbolicInt> shape = x->shape;
    Trace result = make(Trace::Op::Slice, {x}, shape);
    result.axis = axis;
    result.start = clamp(start);
    result.end = clamp(end);
    if (result.start >= result.end) fail_(fmt::format("takes the empty range [{}, {})", start, end));
    result.shape[static_cast<size_t>(axis)] = fixed(result.end - result.start);
    return result;
  }

  Trace reshape(const TracePtr& x, const SymbolicTensor& target, bool allow_zero) const {
    const auto count = element_count(x->shape);
    if (!count) fail_(fmt::format("reshapes {}, which has two batch-dependent dims", symbolic_text(x->shape)));
    std::vector<SymbolicInt> shape = target.values;
    int inferred = -1;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == fixed(0) && !allow_zero && d < x->shape.size()) shape[d] = x->shape[d];
      if (shape[d] == fixed(-1)) {
        if (inferred >= 0) fail_("has two -1 dims");
        inferred = static_cast<int>(d);
      }
    }
    if (inferred >= 0) {
      std::vector<SymbolicInt> known = shape;
      known[static_cast<size_t>(inferred)] = fixed(1);
      const auto known_count = element_count(known);
      const auto dim = known_count ? divide(*count, *known_count) : std::nullopt;
      if (!dim) fail_(fmt::format("cannot infer the -1 of {} from {}", symbolic_text(shape), symbolic_text(x->shape)));
      shape[static_cast<size_t>(inferred)] = *dim;
    }
    const auto result_count = element_count(shape);
    if (!result_count || !(*result_count == *count)) {
      fail_(fmt::format("reshapes {} to {}, another number of elements", symbolic_text(x->shape), symbolic_text(shape)));
    }
    return reshaped(x, std::move(shape));
  }

  // x with size-1 dims inserted at `axes` of the result (Unsqueeze) or removed (Squeeze).
  Trace unsqueeze(const TracePtr& x, std::vector<int64_t> axes) const {
    std::vector<SymbolicInt> shape = x->shape;
    const auto rank = static_cast<int64_t>(shape.size() + axes.size());
    for (int64_t& axis : axes) axis = axis < 0 ? axis + rank : axis;
    std::sort(axes.begin(), axes.end());
    for (const int64_t axis : axes) {
      if (axis < 0 || axis > static_cast<int64_t>(shape.size())) fail_(fmt::format("unsqueezes axis {} of {}", axis, symbolic_text(x->shape)));
      shape.insert(shape.begin() + axis, fixed(1));
    }
    return reshaped(x, std::move(shape));
  }
  Trace squeeze(const TracePtr& x, std::vector<int64_t> axes) const {
    const auto rank = static_cast<int64_t>(x->shape.size());
    std::vector<SymbolicInt> shape;
    for (int64_t d = 0; d < rank; ++d) {
      const bool listed = std::find(axes.begin(), axes.end(), d) != axes.end() ||
                          std::find(axes.begin(), axes.end(), d - rank) != axes.end();
      const bool one = x->shape[static_cast<size_t>(d)] == fixed(1);
      if (listed && !one) fail_(fmt::format("squeezes axis {} of {}, which is not 1", d, symbolic_text(x->shape)));
      if (!(axes.empty() ? one : listed)) shape.push_back(x->shape[static_cast<size_t>(d)]);
    }
    return reshaped(x, std::move(shape));
  }

  // Element `index` along `axis` (Gather with a scalar index): a one-wide slice without its axis.
  Trace pick(const TracePtr& x, int64_t axis, int64_t index) const {
    const auto rank = static_cast<int64_t>(x->shape.size());
    if (axis < 0) axis += rank;
    const auto sliced = std::make_shared<const Trace>(slice(x, axis, index, index == -1 ? INT64_MAX : index + 1));
    return squeeze(sliced, {axis});
  }

  // A Reshape of x; a reshape of a reshape is one reshape of the first one's input.
  Trace reshaped(const TracePtr& x, std::vector<SymbolicInt> shape) const {
    Trace result = make(Trace::Op::Reshape, {x}, std::move(shape));
    if (x->op == Trace::Op::Reshape) result.inputs = x->inputs;
    return result;
  }

  Trace make(Trace::Op op, std::vector<TracePtr> inputs, std::vector<SymbolicInt> shape) const {
    Trace result;
    result.op = op;
    result.inputs = std::move(inputs);
    result.shape = std::move(shape);
    result.node = node_.name();
    return result;
  }

 private:
  const onnx::NodeProto& node_;
  std::function<void(const std::string&)> fail_;
};

}  // namespace

bool Lowering::merges_batch(const onnx::NodeProto& reshape) const {
  // A target whose first dim is -1 or k * batch while the rest do not hold a sample: the
  // batch is merged into a dim with others (Hugging Face's Conv1D views x as [-1, in]).
  const SymbolicTensor& target = integer_input(reshape, 1);
  if (target.values.empty()) return false;
  const SymbolicInt first = target.values[0];
  if (first.batch > 1 && first.constant == 0) return true;
  if (!(first == fixed(-1))) return false;
  int64_t rest = 1, elements = 1;
  for (size_t d = 1; d < target.values.size(); ++d) {
    if (target.values[d].batch != 0 || target.values[d].constant <= 0) return false;
    rest *= target.values[d].constant;
  }
  for (const int64_t dim : info_of(layer_input(reshape, 0)).output_shape) elements *= dim;
  return rest != elements && elements % rest == 0;
}

void Lowering::trace_flatten(const onnx::NodeProto& reshape) {
  // x [B, S..., in] as [B * S..., in]: a trace from x itself, reshaped.
  const std::string x = layer_input(reshape, 0);
  const TraceBuilder build(reshape, [this, &reshape](const std::string& reason) { fail(reshape, reason); });
  Trace start;
  start.op = Trace::Op::Start;
  start.shape.push_back(kBatch);
  for (const int64_t dim : info_of(x).output_shape) start.shape.push_back(fixed(dim));
  for (size_t d = 0; d < start.shape.size(); ++d) start.perm.push_back(static_cast<int64_t>(d));
  start.layer = x;
  start.node = reshape.name();
  const auto started = std::make_shared<const Trace>(std::move(start));
  bind_trace(reshape.output(0), build.reshape(started, integer_input(reshape, 1), attr_int(reshape, "allowzero", 0) != 0));
}

std::string Lowering::close_flattened_linear(const onnx::NodeProto& node, const Trace& closing) {
  // Reshape(Gemm(Reshape(x, [-1, in]), W, b), [B, S..., out]) is a linear layer on x's last dim.
  const Trace* linear = closing.op == Trace::Op::Reshape ? closing.inputs.at(0).get() : nullptr;
  const Trace* flat = linear != nullptr && linear->op == Trace::Op::Linear ? linear->inputs.at(0).get() : nullptr;
  const Trace* start = flat != nullptr && flat->op == Trace::Op::Reshape ? flat->inputs.at(0).get() : nullptr;
  const bool matches = start != nullptr && start->op == Trace::Op::Start && flat->shape.size() == 2 &&
                       start->shape.size() == closing.shape.size() &&
                       std::equal(start->shape.begin(), start->shape.end() - 1, closing.shape.begin());
  if (!matches) {
    fail(node, fmt::format("puts the batch first again as {} after a computation burst does not read (it reads a "
                           "linear layer on rows [-1, in], restored to the input's leading dims)",
                           symbolic_text(closing.shape)));
  }
  const int64_t out = closing.shape.back().constant;
  LayerWeights weights;
  // The weight in its own layout: [out, in] as torch.nn.Linear, or [in, out] as Conv1D.
  weights.parameters.push_back(linear->weight_as_torch ? torch_linear_weight(*linear->weight, true) : initial(*linear->weight));
  if (linear->bias != nullptr) weights.parameters.push_back(initial(*linear->bias, {out}));
  LinearAttrs attrs{out, linear->bias != nullptr, ""};
  attrs.weight_in_out = !linear->weight_as_torch;
  std::string name = state_dict_prefix(linear->weight->name);
  const std::string layer = add_named_layer(node, name, {start->layer}, attrs);
  weights_[layer] = std::move(weights);
  return layer;
}

// Slice, Unsqueeze, Squeeze and Gather of a traced tensor: views of its elements, each a
// Slice or a Reshape trace (torch 2.x picks q, k and v with Gather).
void Lowering::trace_view(const onnx::NodeProto& node) {
  const TraceBuilder build(node, [this, &node](const std::string& reason) { fail(node, reason); });
  const std::string& op = node.op_type();
  const TracePtr x = input(node, 0).trace;
  if (op == "Slice") {
    const std::vector<int64_t> starts = fixed_integers(node, 1), ends = fixed_integers(node, 2);
    std::vector<int64_t> axes = has_input(node, 3) ? fixed_integers(node, 3) : std::vector<int64_t>{};
    if (axes.empty()) {
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    if (has_input(node, 4)) {
      for (const int64_t step : fixed_integers(node, 4)) {
        if (step != 1) fail(node, fmt::format("step {} is not supported (1 is)", step));
      }
    }
    if (starts.size() != ends.size() || axes.size() != starts.size()) fail(node, "starts, ends and axes differ in length");
    TracePtr result = x;
    for (size_t i = 0; i < axes.size(); ++i) result = std::make_shared<const Trace>(build.slice(result, axes[i], starts[i], ends[i]));
    values_[node.output(0)].trace = result;
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    std::vector<int64_t> axes = has_input(node, 1) ? fixed_integers(node, 1) : attr_ints(node, "axes", {});
    bind_trace(node.output(0), op == "Unsqueeze" ? build.unsqueeze(x, std::move(axes)) : build.squeeze(x, std::move(axes)));
  } else if (op == "Gather") {
    const SymbolicTensor& index = integer_input(node, 1);
    if (!index.dims.empty() || index.values.size() != 1 || index.values[0].batch != 0) {
      fail(node, "burst gathers one fixed index from a sequence-first tensor only");
    }
    bind_trace(node.output(0), build.pick(x, attr_int(node, "axis", 0), index.values[0].constant));
  }
}

// Long: a dispatch over the ONNX ops an attention trace may hold,
// one short case each, in the order the exporters emit them.
void Lowering::trace_op(const onnx::NodeProto& node) {
  const TraceBuilder build(node, [this, &node](const std::string& reason) { fail(node, reason); });
  const std::string& op = node.op_type();
  const TracePtr x = input(node, 0).trace;
  if (op == "Shape") return shape(node);
  if (!x && op != "Add" && op != "Mul") {
    fail(node, fmt::format("reads '{}' as a constant or shape, where a sequence-first tensor is traced", node.input(0)));
  }
  if (op == "Identity" || op == "Cast" || (op == "Dropout" && (!has_input(node, 1) || scalar_value(node.input(1)) == 0.0))) {
    if (op == "Dropout") only_first_output_used(node, "mask");
    values_[node.output(0)] = input(node, 0);
    return;
  }
  if (op == "Transpose") {
    Trace result = build.transpose(x, attr_ints(node, "perm", {}));
    // [B, T, D] again closes the trace; torch 2.x's keys pass through a batch-first
    // [B, heads, d, T] inside the attention, which stays traced.
    if (only_batch_first(result.shape) && result.shape.size() == 3) {
      bind_layer(node.output(0), close_trace(node, result));
    } else {
      bind_trace(node.output(0), std::move(result));
    }
  } else if (op == "MatMul") {
    const Value& b = input(node, 1);
    if (b.trace) {
      bind_trace(node.output(0), build.batched_matmul(x, b.trace));
    } else {
      bind_trace(node.output(0), build.linear(x, constant_input(node, 1), b.transposed));
    }
  } else if (op == "Gemm") {
    if (attr_int(node, "transA", 0) != 0 || attr_float(node, "alpha", 1) != 1 || attr_float(node, "beta", 1) != 1) {
      fail(node, "burst reads Gemm as torch.nn.Linear only (transA 0, alpha and beta 1)");
    }
    const bool as_torch = (attr_int(node, "transB", 0) != 0) != input(node, 1).transposed;
    auto linear = std::make_shared<const Trace>(build.linear(x, constant_input(node, 1), as_torch));
    bind_trace(node.output(0), has_input(node, 2) ? build.with_bias(linear, constant_input(node, 2)) : *linear);
  } else if (op == "Add") {
    const int traced = x ? 0 : 1;
    if (uses(node.input(traced)) != 1) fail(node, "adds a bias to a product that other nodes read too");
    bind_trace(node.output(0), build.with_bias(input(node, traced).trace, constant_input(node, 1 - traced)));
  } else if (op == "Div" || op == "Mul") {
    const int traced = x ? 0 : 1;
    const auto factor = scalar_value(node.input(1 - traced));
    if (!factor || (op == "Div" && (traced != 0 || *factor == 0))) {
      fail(node, "burst scales a sequence-first tensor by a constant scalar only");
    }
    Trace result = build.make(Trace::Op::Scale, {input(node, traced).trace}, input(node, traced).trace->shape);
    result.factor = op == "Div" ? 1 / *factor : *factor;
    bind_trace(node.output(0), std::move(result));
  } else if (op == "Slice" || op == "Unsqueeze" || op == "Squeeze" || op == "Gather") {
    trace_view(node);
  } else if (op == "Reshape") {
    Trace result = build.reshape(x, integer_input(node, 1), attr_int(node, "allowzero", 0) != 0);
    // The batch first again: a linear layer on flattened rows closes here (Conv1D); torch's
    // attention stays traced until its Transpose.
    if (only_batch_first(result.shape) && x->op == Trace::Op::Linear && x->inputs.at(0)->op == Trace::Op::Reshape &&
        x->inputs.at(0)->inputs.at(0)->op == Trace::Op::Start && x->inputs.at(0)->inputs.at(0)->perm.size() == result.shape.size()) {
      bind_layer(node.output(0), close_flattened_linear(node, result));
    } else {
      bind_trace(node.output(0), std::move(result));
    }
  } else if (op == "Softmax") {
    const int64_t axis = attr_int(node, "axis", -1);
    if (axis != -1 && axis != static_cast<int64_t>(x->shape.size()) - 1) fail(node, "burst reads a softmax over the last dim only");
    bind_trace(node.output(0), build.make(Trace::Op::Softmax, {x}, x->shape));
  } else {
    fail(node, fmt::format("reads '{}', a tensor of shape {} whose batch is not its first dim (since node '{}'); "
                           "burst reads such tensors only inside torch's multi-head attention",
                           node.input(0), symbolic_text(x->shape), x->node));
  }
}

}  // namespace burst::graph::onnx_import
