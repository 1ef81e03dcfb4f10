// Shape arithmetic and shape ops. torch.onnx.export writes x.view(b, g, c // g, h, w) as
// Shape -> Gather -> Div -> Unsqueeze -> Concat -> Reshape, computed at run time from the
// dynamic batch. burst folds it at import: every integer is batch x (batch size) + constant
// (SymbolicInt), so a target shape must name the batch as its first dim and fixed sizes
// after it, which become a per-sample reshape.
#include <algorithm>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "onnx/broadcast.h"
#include "onnx/onnx_attributes.h"
#include "onnx/onnx_lowering.h"

namespace burst::graph::onnx_import {
namespace {

// An axis of a tensor of `rank` dims (with the batch), negative counting from the end.
int64_t normalized_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

}  // namespace

std::string symbolic_text(const SymbolicInt& value) {
  if (value.batch == 0) return std::to_string(value.constant);
  std::string text = value.batch == 1 ? "batch" : fmt::format("{}*batch", value.batch);
  return value.constant == 0 ? text : fmt::format("{}{:+}", text, value.constant);
}

std::string symbolic_text(const std::vector<SymbolicInt>& shape) {
  std::string list;
  for (const SymbolicInt& dim : shape) list += (list.empty() ? "" : ", ") + symbolic_text(dim);
  return "[" + list + "]";
}

void Lowering::shape(const onnx::NodeProto& node) {
  std::vector<SymbolicInt> dims;
  if (is_integer(node, 0)) {  // the shape of a shape: [rank]
    for (const int64_t dim : integer_input(node, 0).dims) dims.push_back(SymbolicInt{0, dim});
  } else if (const auto& trace = input(node, 0).trace) {  // a sequence-first tensor
    dims = trace->shape;
  } else {
    dims.push_back(SymbolicInt{1, 0});
    for (const int64_t dim : info_of(layer_input(node, 0)).output_shape) dims.push_back(SymbolicInt{0, dim});
  }
  const auto rank = static_cast<int64_t>(dims.size());
  // Opset 15's start and end, clamped as ONNX clamps them.
  int64_t start = normalized_axis(attr_int(node, "start", 0), rank);
  int64_t end = normalized_axis(attr_int(node, "end", rank), rank);
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<SymbolicInt> kept(dims.begin() + start, dims.begin() + end);
  const auto count = static_cast<int64_t>(kept.size());
  bind_integers(node.output(0), SymbolicTensor{{count}, std::move(kept)});
}

void Lowering::gather(const onnx::NodeProto& node) {
  if (!input(node, 0).layer.empty()) return take_token(node);
  if (input(node, 0).constant != nullptr && input(node, 0).constant->is_float) return table_gather(node);
  const SymbolicTensor& data = integer_input(node, 0);
  if (data.dims.size() != 1 || attr_int(node, "axis", 0) != 0) {
    fail(node, "burst gathers from 1-D integer tensors (shapes) only");
  }
  const SymbolicTensor& indices = integer_input(node, 1);
  SymbolicTensor out{indices.dims, {}};
  const auto size = static_cast<int64_t>(data.values.size());
  for (const int64_t index : fixed_integers(node, 1)) {
    const int64_t at = index < 0 ? index + size : index;
    if (at < 0 || at >= size) fail(node, fmt::format("index {} is outside the {} values", index, size));
    out.values.push_back(data.values[static_cast<size_t>(at)]);
  }
  bind_integers(node.output(0), std::move(out));
}

void Lowering::unsqueeze(const onnx::NodeProto& node) {
  if (!input(node, 0).layer.empty()) {  // x[:, :, None]: a reshape that inserts size-1 dims
    const std::string x = input(node, 0).layer;
    Shape with_batch{1};
    const Shape& in = info_of(x).output_shape;
    with_batch.insert(with_batch.end(), in.begin(), in.end());
    const Shape out = unsqueezed(node, with_batch);
    std::vector<int64_t> axes = has_input(node, 1) ? fixed_integers(node, 1) : attr_ints(node, "axes", {});
    for (int64_t& axis : axes) axis = axis < 0 ? axis + static_cast<int64_t>(out.size()) : axis;
    if (std::find(axes.begin(), axes.end(), 0) != axes.end()) fail(node, "unsqueezes before the batch");
    return void(add_layer(node, "", {x}, ReshapeAttrs{Shape(out.begin() + 1, out.end())}));
  }
  if (fold_float_unsqueeze(node)) return;
  if (is_float_initializer(node, 0)) return learned_view(node);  // weight.unsqueeze(...): GroupNorm's, PReLU's
  SymbolicTensor out = integer_input(node, 0);
  std::vector<int64_t> axes = has_input(node, 1) ? fixed_integers(node, 1) : attr_ints(node, "axes", {});
  const auto rank = static_cast<int64_t>(out.dims.size() + axes.size());
  for (int64_t& axis : axes) axis = normalized_axis(axis, rank);
  std::sort(axes.begin(), axes.end());
  for (const int64_t axis : axes) {
    if (axis < 0 || axis > static_cast<int64_t>(out.dims.size())) fail(node, fmt::format("axis {} is out of range", axis));
    out.dims.insert(out.dims.begin() + axis, 1);
  }
  bind_integers(node.output(0), std::move(out));
}

void Lowering::squeeze(const onnx::NodeProto& node) {
  SymbolicTensor out = integer_input(node, 0);
  const auto rank = static_cast<int64_t>(out.dims.size());
  std::vector<int64_t> axes = has_input(node, 1) ? fixed_integers(node, 1) : attr_ints(node, "axes", {});
  std::vector<bool> squeezed(out.dims.size(), axes.empty());  // no axes: every size-1 dim
  for (const int64_t axis : axes) {
    const int64_t at = normalized_axis(axis, rank);
    if (at < 0 || at >= rank || out.dims[static_cast<size_t>(at)] != 1) {
      fail(node, fmt::format("axis {} is not a size-1 dim of [{}]", axis, fmt::join(out.dims, ", ")));
    }
    squeezed[static_cast<size_t>(at)] = true;
  }
  std::vector<int64_t> dims;
  for (size_t d = 0; d < out.dims.size(); ++d) {
    if (!(squeezed[d] && out.dims[d] == 1)) dims.push_back(out.dims[d]);
  }
  out.dims = dims;  // dropping size-1 dims keeps the values as they are
  bind_integers(node.output(0), std::move(out));
}

void Lowering::cast(const onnx::NodeProto& node) {
  if (fold_scalar_cast(node)) return;  // a number known at import, as a float
  if (fold_integers_to_floats(node)) return;  // a table of them (rotary positions)
  const Value& value = input(node, 0);
  const int64_t to = attr_int(node, "to", 0);
  const bool to_integer = to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32;
  if (value.ints && to_integer) {
    values_[node.output(0)] = value;
  } else if (value.ints && to == onnx::TensorProto::BOOL) {  // masked_fill's mask == 0
    SymbolicTensor truth{value.ints->dims, {}};
    for (const SymbolicInt& v : value.ints->values) {
      if (v.batch != 0) fail(node, fmt::format("casts {} to bool, which depends on the batch size", symbolic_text(v)));
      truth.values.push_back(fixed(v.constant != 0 ? 1 : 0));
    }
    bind_integers(node.output(0), std::move(truth));
  } else if (!value.layer.empty() && to == onnx::TensorProto::FLOAT) {
    bind_layer(node.output(0), value.layer);
  } else {
    if (value.constant != nullptr && value.constant->is_float && to == onnx::TensorProto::FLOAT) {
      values_[node.output(0)] = value;  // a float table (positions, a mask) stays itself
      return;
    }
    fail(node, fmt::format("burst casts integers to integers and float32 to float32 only (to = {})", to));
  }
}

// x mod y of two batch-independent integers, as ONNX's Mod defines it: with fmod = 0 (the
// default) the result takes the divisor's sign, as Python's %; with fmod = 1 the dividend's.
int64_t Lowering::integer_modulo(const onnx::NodeProto& node, const SymbolicInt& x, const SymbolicInt& y) {
  if (x.batch != 0 || y.batch != 0) fail(node, fmt::format("{} mod {} depends on the batch size", symbolic_text(x), symbolic_text(y)));
  if (y.constant == 0) fail(node, "takes an integer modulo 0");
  int64_t remainder = x.constant % y.constant;  // C++: the dividend's sign
  if (attr_int(node, "fmod", 0) == 0 && remainder != 0 && ((remainder < 0) != (y.constant < 0))) remainder += y.constant;
  return remainder;
}

void Lowering::integer_arithmetic(const onnx::NodeProto& node) {
  if (!is_integer(node, 0) || !is_integer(node, 1)) {
    fail(node, "burst computes Add, Sub, Mul, Div and Mod of integers at import (shape arithmetic), and on "
               "tensors only Add and Mul of two computed inputs");
  }
  const SymbolicTensor& a = integer_input(node, 0);
  const SymbolicTensor& b = integer_input(node, 1);
  const size_t count = std::max(a.values.size(), b.values.size());
  if ((a.values.size() != count && a.values.size() != 1) || (b.values.size() != count && b.values.size() != 1)) {
    fail(node, "burst broadcasts integer arithmetic over one value only");
  }
  SymbolicTensor out{a.values.size() == count ? a.dims : b.dims, {}};
  const std::string& op = node.op_type();
  for (size_t i = 0; i < count; ++i) {
    const SymbolicInt x = a.values[a.values.size() == 1 ? 0 : i], y = b.values[b.values.size() == 1 ? 0 : i];
    SymbolicInt r;
    if (op == "Add" || op == "Sub") {
      const int64_t sign = op == "Add" ? 1 : -1;
      r = SymbolicInt{x.batch + sign * y.batch, x.constant + sign * y.constant};
    } else if (op == "Mul") {
      if (x.batch != 0 && y.batch != 0) fail(node, "multiplies two batch-dependent integers");
      r = x.batch != 0 ? SymbolicInt{x.batch * y.constant, x.constant * y.constant}
                       : SymbolicInt{y.batch * x.constant, y.constant * x.constant};
    } else if (op == "Mod") {
      r = SymbolicInt{0, integer_modulo(node, x, y)};
    } else {
      BURST_ASSERT(op == "Div", "integer_arithmetic handles Add, Sub, Mul, Div and Mod");
      if (y.batch != 0 || y.constant == 0) fail(node, fmt::format("divides by {}", symbolic_text(y)));
      if (x.batch % y.constant != 0 || (x.batch != 0 && x.constant % y.constant != 0)) {
        fail(node, fmt::format("{} / {} depends on the batch size", symbolic_text(x), symbolic_text(y)));
      }
      r = SymbolicInt{x.batch / y.constant, x.constant / y.constant};  // truncates, as ONNX does
    }
    out.values.push_back(r);
  }
  bind_integers(node.output(0), std::move(out));
}

// Long: the two forms of Reshape (integers to a shape, a tensor to
// a shape) share the resolution of the target shape's 0 and -1 entries.
void Lowering::reshape(const onnx::NodeProto& node) {
  if (is_integer(node, 0)) {  // integers to a fixed shape of as many values
    SymbolicTensor out = integer_input(node, 0);
    std::vector<int64_t> dims = fixed_integers(node, 1);
    int64_t known = 1;
    for (const int64_t dim : dims) known *= dim == -1 ? 1 : dim;
    const auto count = static_cast<int64_t>(out.values.size());
    for (int64_t& dim : dims) {
      if (dim == -1 && known > 0) dim = count / known;
    }
    int64_t product = 1;
    for (const int64_t dim : dims) product *= dim;
    if (product != count) fail(node, fmt::format("reshapes {} integers to [{}]", count, fmt::join(dims, ", ")));
    out.dims = dims;
    bind_integers(node.output(0), std::move(out));
    return;
  }
  const std::string x = layer_input(node, 0);
  if (merges_batch(node)) return trace_flatten(node);
  const SymbolicTensor& target = integer_input(node, 1);
  const Shape& in = info_of(x).output_shape;
  const bool allow_zero = attr_int(node, "allowzero", 0) != 0;
  const auto describe_target = [&] { return symbolic_text(target.values); };
  if (target.values.empty()) fail(node, "reshapes to a scalar");
  const SymbolicInt first = target.values[0];
  if (!(first == SymbolicInt{1, 0}) && !(first == SymbolicInt{0, 0} && !allow_zero) &&
      !(first == SymbolicInt{0, -1})) {
    fail(node, fmt::format("target shape {} does not keep the batch as its first dim", describe_target()));
  }
  Shape shape;
  int inferred = -1;
  int64_t known = 1, elements = 1;
  for (const int64_t dim : in) elements *= dim;
  for (size_t i = 1; i < target.values.size(); ++i) {
    const SymbolicInt v = target.values[i];
    if (v.batch != 0) fail(node, fmt::format("target shape {} mixes the batch into a per-sample dim", describe_target()));
    int64_t dim = v.constant;
    if (dim == 0 && !allow_zero) {
      if (i - 1 >= in.size()) fail(node, "copies a dim the input does not have");
      dim = in[i - 1];
    }
    if (dim == -1) {
      if (inferred >= 0) fail(node, "has two -1 dims");
      inferred = static_cast<int>(shape.size());
    } else if (dim <= 0) {
      fail(node, fmt::format("target shape {} has a dim {}", describe_target(), dim));
    } else {
      known *= dim;
    }
    shape.push_back(dim);
  }
  if (first == SymbolicInt{0, -1} && inferred >= 0) fail(node, "leaves both the batch and a dim to infer");
  if (inferred >= 0) {
    if (known <= 0 || elements % known != 0) fail(node, fmt::format("cannot infer the -1 of {}", describe_target()));
    shape[static_cast<size_t>(inferred)] = elements / known;
  }
  if (shape == in) {
    bind_layer(node.output(0), x);
    return;
  }
  add_layer(node, "", {x}, ReshapeAttrs{shape});
}

void Lowering::transpose(const onnx::NodeProto& node) {
  const Value& value = input(node, 0);
  std::vector<int64_t> perm = attr_ints(node, "perm", {});
  if (value.ints && value.ints->dims.size() == 2 && (perm.empty() || perm == std::vector<int64_t>{1, 0})) {
    // An integer matrix transposed (F.pad's [2, dims] pad list to ONNX's order).
    const SymbolicTensor& x = *value.ints;
    SymbolicTensor out{{x.dims[1], x.dims[0]}, {}};
    for (int64_t c = 0; c < x.dims[1]; ++c) {
      for (int64_t r = 0; r < x.dims[0]; ++r) out.values.push_back(x.values[static_cast<size_t>(r * x.dims[1] + c)]);
    }
    return bind_integers(node.output(0), std::move(out));
  }
  if (value.constant != nullptr && value.layer.empty()) {  // x @ W.t(): the weight read transposed
    if (value.constant->dims.size() != 2 || (!perm.empty() && perm != std::vector<int64_t>{1, 0})) {
      fail(node, "burst transposes constant matrices only (a weight for MatMul)");
    }
    Value transposed = value;
    transposed.transposed = !value.transposed;
    values_[node.output(0)] = transposed;
    return;
  }
  const std::string x = layer_input(node, 0);
  const auto rank = static_cast<int64_t>(info_of(x).output_shape.size()) + 1;
  if (perm.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);  // ONNX's default: reversed
  }
  if (static_cast<int64_t>(perm.size()) != rank) fail(node, fmt::format("perm {} does not fit rank {}", fmt::join(perm, ","), rank));
  if (perm[0] != 0) return trace_transpose(node, perm);  // sequence-first attention
  Shape per_sample;
  bool identity = true;
  for (size_t i = 1; i < perm.size(); ++i) {
    per_sample.push_back(perm[i] - 1);
    identity = identity && perm[i] == static_cast<int64_t>(i);
  }
  if (identity) {
    bind_layer(node.output(0), x);
    return;
  }
  add_layer(node, "", {x}, TransposeAttrs{per_sample});
}

Lowering::SliceArguments Lowering::slice_arguments(const onnx::NodeProto& node) const {
  SliceArguments args{fixed_integers(node, 1), fixed_integers(node, 2), {}, {}};
  if (has_input(node, 3)) {
    args.axes = fixed_integers(node, 3);
  } else {
    for (size_t i = 0; i < args.starts.size(); ++i) args.axes.push_back(static_cast<int64_t>(i));
  }
  args.steps = has_input(node, 4) ? fixed_integers(node, 4) : std::vector<int64_t>(args.starts.size(), 1);
  if (args.ends.size() != args.starts.size() || args.axes.size() != args.starts.size() ||
      args.steps.size() != args.starts.size()) {
    fail(node, "starts, ends, axes and steps differ in length");
  }
  return args;
}

Lowering::SliceWindow Lowering::slice_window(const onnx::NodeProto& node, const std::vector<int64_t>& dims) const {
  // ONNX's clamping: a positive step runs from start in [0, size] to end in [0, size), a
  // negative one from start in [0, size - 1] down to end in [-1, size - 1).
  const SliceArguments args = slice_arguments(node);
  const auto rank = static_cast<int64_t>(dims.size());
  SliceWindow window{std::vector<int64_t>(dims.size(), 0), std::vector<int64_t>(dims.size(), 1), dims};
  for (size_t i = 0; i < args.axes.size(); ++i) {
    const int64_t axis = normalized_axis(args.axes[i], rank);
    if (axis < 0 || axis >= rank || args.steps[i] == 0) fail(node, "slices an axis the constant does not have, or with step 0");
    const int64_t size = dims[static_cast<size_t>(axis)], s = args.steps[i];
    const auto at = [size](int64_t v, int64_t low, int64_t high) { return std::clamp<int64_t>(v < 0 ? v + size : v, low, high); };
    const int64_t begin = s > 0 ? at(args.starts[i], 0, size) : at(args.starts[i], 0, size - 1);
    const int64_t stop = s > 0 ? at(args.ends[i], 0, size) : (args.ends[i] < -size ? -1 : at(args.ends[i], -1, size - 1));
    const int64_t count = s > 0 ? (stop - begin + s - 1) / s : (begin - stop + (-s) - 1) / (-s);
    window.first[static_cast<size_t>(axis)] = begin;
    window.step[static_cast<size_t>(axis)] = s;
    window.dims[static_cast<size_t>(axis)] = std::max<int64_t>(0, count);
  }
  return window;
}

std::vector<size_t> Lowering::SliceWindow::sources(const std::vector<int64_t>& data_dims) const {
  int64_t count = 1;
  for (const int64_t dim : dims) count *= dim;
  std::vector<size_t> result;
  result.reserve(static_cast<size_t>(count));
  std::vector<int64_t> at(dims.size(), 0);  // the output index, row-major
  for (int64_t n = 0; n < count; ++n) {
    size_t source = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      source = source * static_cast<size_t>(data_dims[d]) + static_cast<size_t>(first[d] + at[d] * step[d]);
    }
    result.push_back(source);
    for (size_t d = dims.size(); d-- > 0 && ++at[d] == dims[d];) at[d] = 0;
  }
  return result;
}

void Lowering::integer_slice(const onnx::NodeProto& node) {
  // Integers sliced along any of their axes, with any step: shapes, buffers of ids (BERT's
  // position_ids[:, :T]), and F.pad's pad list reversed pairwise.
  const SymbolicTensor& data = integer_input(node, 0);
  const SliceWindow window = slice_window(node, data.dims);
  SymbolicTensor out{window.dims, {}};
  for (const size_t source : window.sources(data.dims)) out.values.push_back(data.values[source]);
  Value value;
  value.ints = std::move(out);
  value.over_batch = input(node, 0).over_batch;
  values_[node.output(0)] = std::move(value);
}

void Lowering::gather_elements(const onnx::NodeProto& node) {
  // torch.gather of integers known at import (BERT's token types: a buffer gathered by the
  // position ids): out[i][j] = data[i][indices[i][j]] on axis 1, as ONNX's GatherElements.
  const SymbolicTensor& data = integer_input(node, 0);
  const SymbolicTensor& indices = integer_input(node, 1);
  const std::vector<int64_t> index = fixed_integers(node, 1);
  const int64_t axis = normalized_axis(attr_int(node, "axis", 0), static_cast<int64_t>(data.dims.size()));
  if (data.dims.size() != 2 || indices.dims.size() != 2 || axis != 1 || indices.dims[0] != data.dims[0]) {
    fail(node, "burst folds GatherElements of 2-D integers on axis 1 only");
  }
  SymbolicTensor out{indices.dims, {}};
  const int64_t columns = data.dims[1];
  for (int64_t i = 0; i < indices.dims[0]; ++i) {
    for (int64_t j = 0; j < indices.dims[1]; ++j) {
      int64_t at = index[static_cast<size_t>(i * indices.dims[1] + j)];
      if (at < 0) at += columns;
      if (at < 0 || at >= columns) fail(node, fmt::format("index {} is outside the {} columns", at, columns));
      out.values.push_back(data.values[static_cast<size_t>(i * columns + at)]);
    }
  }
  Value value;
  value.ints = std::move(out);
  value.over_batch = input(node, 0).over_batch || input(node, 1).over_batch;
  values_[node.output(0)] = std::move(value);
}

void Lowering::slice(const onnx::NodeProto& node) {
  if (is_integer(node, 0)) return integer_slice(node);
  if (input(node, 0).constant != nullptr && input(node, 0).constant->is_float) return constant_slice(node);
  std::string x = layer_input(node, 0);
  const auto rank = static_cast<int64_t>(info_of(x).output_shape.size()) + 1;
  const SliceArguments args = slice_arguments(node);
  const std::vector<int64_t>& starts = args.starts;
  const std::vector<int64_t>& ends = args.ends;
  const std::vector<int64_t>& axes = args.axes;
  const std::vector<int64_t>& steps = args.steps;
  std::string result = x;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = normalized_axis(axes[i], rank);
    if (axis < 1 || axis >= rank) fail(node, fmt::format("slices axis {}; burst slices per-sample axes only", axes[i]));
    if (steps[i] != 1) fail(node, fmt::format("step {} is not supported (1 is)", steps[i]));
    const int64_t size = info_of(result).output_shape[static_cast<size_t>(axis - 1)];
    const auto clamp = [size](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size); };
    const int64_t start = clamp(starts[i]), end = clamp(ends[i]);
    if (start == 0 && end == size) continue;
    if (start >= end) fail(node, fmt::format("takes the empty range [{}, {}) of axis {}", start, end, axis));
    result = add_layer(node, "", {result}, SliceAttrs{axis - 1, start, end});
  }
  bind_layer(node.output(0), result);
}

void Lowering::split(const onnx::NodeProto& node) {
  // torch.split / chunk: one slice layer per output, along a per-sample axis.
  const std::string x = layer_input(node, 0);
  const Shape& shape = info_of(x).output_shape;
  const auto rank = static_cast<int64_t>(shape.size()) + 1;
  const int64_t axis = normalized_axis(attr_int(node, "axis", 0), rank);
  if (axis < 1 || axis >= rank) fail(node, fmt::format("splits axis {}; burst splits per-sample axes only", axis));
  const int64_t size = shape[static_cast<size_t>(axis - 1)];
  // The sizes: input 1 from opset 13, the 'split' attribute before; else equal parts.
  std::vector<int64_t> sizes = has_input(node, 1) ? fixed_integers(node, 1) : attr_ints(node, "split", {});
  const auto parts = static_cast<int64_t>(node.output_size());
  if (sizes.empty() && size % parts == 0) sizes.assign(static_cast<size_t>(parts), size / parts);
  int64_t total = 0;
  for (const int64_t part : sizes) total += part > 0 ? part : size + 1;  // a size <= 0 cannot add up
  if (static_cast<int64_t>(sizes.size()) != parts || total != size) {
    fail(node, fmt::format("splits {} elements into [{}] for {} outputs", size, fmt::join(sizes, ", "), parts));
  }
  int64_t start = 0;
  for (int64_t i = 0; i < parts; ++i) {
    const int64_t end = start + sizes[static_cast<size_t>(i)];
    const std::string& output = node.output(static_cast<int>(i));
    if (!output.empty()) {
      const std::string base = node.name().empty() ? output : fmt::format("{}_{}", node.name(), i);
      try {
        bind_layer(output, append(LayerSpec{base, {x}, SliceAttrs{axis - 1, start, end}}));
      } catch (const UserError& error) {
        fail(node, error.what());
      }
    }
    start = end;
  }
}

void Lowering::reduce_mean(const onnx::NodeProto& node) {
  const std::string x = layer_input(node, 0);
  if (fuse_layer_norm(node)) return;
  const auto rank = static_cast<int64_t>(info_of(x).output_shape.size()) + 1;
  std::vector<int64_t> axes = attr_ints(node, "axes", {});
  if (axes.empty()) fail(node, "reduces every dim, the batch too");
  Shape per_sample;
  for (const int64_t axis : axes) {
    const int64_t at = normalized_axis(axis, rank);
    if (at < 1 || at >= rank) fail(node, fmt::format("averages over axis {}; burst averages per-sample axes only", axis));
    per_sample.push_back(at - 1);
  }
  add_layer(node, "", {x}, MeanAttrs{per_sample, attr_int(node, "keepdims", 1) != 0});
}

void Lowering::constant_of_shape(const onnx::NodeProto& node) {
  // torch writes expand(x, [B, -1, -1]) with ConstantOfShape(Shape(shape)) = [1, 1, 1].
  const std::vector<int64_t> dims = fixed_integers(node, 0);
  int64_t fill = 0;
  if (const auto* attribute = find_attribute(node, "value")) {
    ConstantTensor value = decode_tensor(attribute->t(), base_dir_);
    if (value.is_float) fail(node, "burst folds integer ConstantOfShape only (a shape's ones)");
    if (value.ints.size() != 1) fail(node, "value must hold one integer");
    fill = value.ints[0];
  }
  int64_t count = 1;
  for (const int64_t dim : dims) count *= dim;
  if (count < 0 || count > 64) fail(node, fmt::format("makes {} integers; burst folds shapes only", count));
  bind_integers(node.output(0), SymbolicTensor{dims, std::vector<SymbolicInt>(static_cast<size_t>(count), SymbolicInt{0, fill})});
}

namespace {

// Whether a == b for every batch size >= 1; nullopt when that depends on the batch.
std::optional<bool> always_equal(const SymbolicInt& a, const SymbolicInt& b) {
  if (a == b) return true;
  const int64_t k = a.batch - b.batch, c = b.constant - a.constant;  // equal iff k * batch == c
  if (k == 0) return false;
  if (c % k != 0 || c / k < 1) return false;
  return std::nullopt;
}

}  // namespace

void Lowering::equal(const onnx::NodeProto& node) {
  for (int k = 0; k < 2; ++k) {
    if (input(node, k).constant != nullptr && input(node, k).constant->is_float) return constant_equal(node);
  }
  const SymbolicTensor& a = integer_input(node, 0);
  const SymbolicTensor& b = integer_input(node, 1);
  if (a.values.size() != b.values.size() && b.values.size() != 1) fail(node, "burst compares integers of one shape");
  SymbolicTensor out{a.dims, {}};
  for (size_t i = 0; i < a.values.size(); ++i) {
    const SymbolicInt other = b.values[b.values.size() == 1 ? 0 : i];
    const auto same = always_equal(a.values[i], other);
    if (!same) fail(node, fmt::format("compares {} and {}, which depends on the batch size", symbolic_text(a.values[i]), symbolic_text(other)));
    out.values.push_back(SymbolicInt{0, *same ? 1 : 0});
  }
  bind_integers(node.output(0), std::move(out));
}

namespace {

// The largest integer table folded at import (a [T, T] mask of T = 4,096).
constexpr int64_t kMaxFoldedIntegers = int64_t{1} << 24;

// The element count of `dims` if it is at most kMaxFoldedIntegers (no overflow on the way).
std::optional<int64_t> foldable_count(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (const int64_t dim : dims) {
    if (dim < 0 || (dim > 0 && count > kMaxFoldedIntegers / dim)) return std::nullopt;
    count *= dim;
  }
  return count;
}

}  // namespace

void Lowering::integer_comparison(const onnx::NodeProto& node) {
  // Less, LessOrEqual, Greater, GreaterOrEqual, And, Or of batch-independent integers, with
  // numpy broadcasting: causal masks computed as arange(T)[:, None] >= arange(T)[None, :].
  const SymbolicTensor& a = integer_input(node, 0);
  const SymbolicTensor& b = integer_input(node, 1);
  const std::vector<int64_t> x = fixed_integers(node, 0), y = fixed_integers(node, 1);
  const auto dims = broadcast_dims(a.dims, b.dims);
  if (!dims) fail(node, fmt::format("compares [{}] with [{}], which do not broadcast", fmt::join(a.dims, ", "), fmt::join(b.dims, ", ")));
  const std::optional<int64_t> count = foldable_count(*dims);
  if (!count) fail(node, fmt::format("makes a [{}] table; burst folds at most 2^24 integers", fmt::join(*dims, ", ")));
  const std::string& op = node.op_type();
  SymbolicTensor out{*dims, {}};
  out.values.reserve(static_cast<size_t>(*count));
  for_each_broadcast(a.dims, b.dims, *dims, [&](size_t i, size_t j) {
    const int64_t u = x[i], v = y[j];
    const bool holds = op == "Less" ? u < v : op == "LessOrEqual" ? u <= v : op == "Greater" ? u > v
                     : op == "GreaterOrEqual" ? u >= v : op == "And" ? (u != 0 && v != 0) : (u != 0 || v != 0);
    out.values.push_back(fixed(holds ? 1 : 0));
  });
  Value value;
  value.ints = std::move(out);
  value.over_batch = input(node, 0).over_batch || input(node, 1).over_batch;
  values_[node.output(0)] = std::move(value);
}

void Lowering::integer_expand(const onnx::NodeProto& node) {
  // Integers broadcast to a shape; a dim of the batch size stays 1 (the table is one for every
  // sample) and the value is marked as over the batch.
  const SymbolicTensor& x = integer_input(node, 0);
  const SymbolicTensor& shape = integer_input(node, 1);
  std::vector<int64_t> target;
  bool over_batch = input(node, 0).over_batch;
  for (const SymbolicInt& dim : shape.values) {
    if (dim.batch != 0 && !(dim == SymbolicInt{1, 0})) fail(node, fmt::format("expands to {}", symbolic_text(shape.values)));
    over_batch = over_batch || dim.batch != 0;
    target.push_back(dim.batch != 0 ? 1 : dim.constant);
  }
  const auto dims = broadcast_dims(x.dims, target);
  if (!dims) fail(node, fmt::format("expands [{}] to {}", fmt::join(x.dims, ", "), symbolic_text(shape.values)));
  if (!foldable_count(*dims)) {
    fail(node, fmt::format("expands to a [{}] table; burst folds at most 2^24 integers", fmt::join(*dims, ", ")));
  }
  SymbolicTensor out{*dims, {}};
  for_each_broadcast(x.dims, target, *dims, [&](size_t i, size_t) { out.values.push_back(x.values[i]); });
  Value value;
  value.ints = std::move(out);
  value.over_batch = over_batch;
  values_[node.output(0)] = std::move(value);
}

void Lowering::where(const onnx::NodeProto& node) {
  for (int k = 1; k < 3; ++k) {
    if (!input(node, k).layer.empty()) return masked_fill(node, k);
  }
  if (!is_integer(node, 1) && !is_integer(node, 2)) return select_numbers(node);
  const std::vector<int64_t> condition = fixed_integers(node, 0);
  const SymbolicTensor& a = integer_input(node, 1);
  const SymbolicTensor& b = integer_input(node, 2);
  const size_t count = condition.size();
  const auto pick = [&](const SymbolicTensor& t, size_t i) {
    if (t.values.size() != count && t.values.size() != 1) fail(node, "burst selects between integers of one shape");
    return t.values[t.values.size() == 1 ? 0 : i];
  };
  SymbolicTensor out{integer_input(node, 0).dims, {}};
  for (size_t i = 0; i < count; ++i) out.values.push_back(condition[i] != 0 ? pick(a, i) : pick(b, i));
  bind_integers(node.output(0), std::move(out));
}

void Lowering::expand(const onnx::NodeProto& node) {
  if (is_integer(node, 0)) return integer_expand(node);
  if (!input(node, 0).layer.empty()) {  // x.expand(B, ...): a per-sample broadcast
    const std::string x = input(node, 0).layer;
    const SymbolicTensor& target = integer_input(node, 1);
    const Shape& in = info_of(x).output_shape;
    if (target.values.size() != in.size() + 1 || !(target.values[0] == SymbolicInt{1, 0} || target.values[0] == fixed(1))) {
      fail(node, fmt::format("expands {} to {}; burst expands the per-sample dims of a tensor, keeping its batch",
                             shape_to_string(in), symbolic_text(target.values)));
    }
    Shape shape;
    for (size_t d = 1; d < target.values.size(); ++d) {
      const SymbolicInt v = target.values[d];
      if (v.batch != 0) fail(node, fmt::format("expands to {}, a dim that depends on the batch", symbolic_text(target.values)));
      shape.push_back(v.constant == 1 ? in[d - 1] : v.constant);  // ONNX Expand: 1 keeps the input's dim
    }
    if (shape == in) return bind_layer(node.output(0), x);
    return void(add_layer(node, "", {x}, ExpandAttrs{shape}));
  }
  // A learned [1, 1, D] token repeated over the batch: [B, 1, D] (ViT's class token), taken
  // by the Concat that follows (class_token()).
  ConstantTensor& token = constant_input(node, 0);
  const SymbolicTensor& shape = integer_input(node, 1);
  const bool over_batch = !shape.values.empty() && shape.values[0] == SymbolicInt{1, 0} &&
                          token.dims.size() == shape.values.size() && token.dims[0] == 1;
  bool keeps_the_rest = over_batch;
  for (size_t d = 1; keeps_the_rest && d < shape.values.size(); ++d) {
    const SymbolicInt v = shape.values[d];
    keeps_the_rest = v.batch == 0 && (v.constant == 1 || v.constant == token.dims[d]);
  }
  if (!keeps_the_rest) {
    fail(node, "burst expands a constant [1, ...] over the batch only (a class token), keeping its other dims");
  }
  Value value = input(node, 0);
  value.over_batch = true;
  values_[node.output(0)] = value;
}

}  // namespace burst::graph::onnx_import
