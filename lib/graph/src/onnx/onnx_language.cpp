// Language models as users write them in one file (docs/model-import.md, "Models users
// write"): token ids [B, T] as the graph input, nn.Embedding as Gather from a [vocab, D]
// table, positions as Gather of torch.arange(T) (Range) from a [T', D] table, the LM head
// tied to the token table (MatMul by its transpose), attention written out as q @ k^T times
// a number, masked_fill of a lower-triangular buffer (Slice, Equal, Where), softmax and @ v.
// The mask buffer is folded at import and must be causal: it becomes a causal_mask layer.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "onnx/onnx_attributes.h"
#include "onnx/onnx_lowering.h"

namespace burst::graph::onnx_import {
namespace {

// A masked score: -inf, or a number so low that exp() of it beside any real score is 0.
constexpr double kMaskedScore = -1e9;

}  // namespace

int64_t Lowering::token_vocab(const std::string& input) const {
  // The tables of the Gathers reading the ids, directly or through views of them
  // (input_ids.view(-1, T), as Hugging Face's GPT-2 writes).
  int64_t vocab = 0;
  std::vector<std::string> ids{input};
  for (size_t next = 0; next < ids.size() && ids.size() < 64; ++next) {
    const auto readers = readers_.find(ids[next]);
    if (readers == readers_.end()) continue;
    for (const onnx::NodeProto* reader : readers->second) {
      const std::string& op = reader->op_type();
      if ((op == "Reshape" || op == "Identity" || op == "Squeeze" || op == "Unsqueeze") && reader->input(0) == ids[next]) {
        ids.push_back(reader->output(0));
      }
      if (op != "Gather" || reader->input_size() < 2 || reader->input(1) != ids[next]) continue;
      const auto table = values_.find(reader->input(0));
      if (table == values_.end() || table->second.constant == nullptr || !table->second.constant->is_float ||
          table->second.constant->dims.size() != 2) {
        continue;
      }
      const int64_t rows = table->second.constant->dims[0];
      vocab = vocab == 0 ? rows : std::min(vocab, rows);
    }
  }
  if (vocab == 0) {
    throw UserError(fmt::format("graph input '{}' holds int64 values; burst reads int64 inputs as token ids, "
                                "read by an embedding (Gather from a [vocab, D] float table), and none reads it",
                                input));
  }
  return vocab;
}

const Shape* Lowering::token_input_shape() const {
  for (const LayerSpec& layer : layers_) {
    const auto* input = std::get_if<InputAttrs>(&layer.attrs);
    if (input != nullptr && input->dtype == DType::Int64) return &input->shape;
  }
  return nullptr;
}

void Lowering::range(const onnx::NodeProto& node) {
  // torch.arange(start, limit, delta) with numbers known at import: integers [n].
  const std::vector<int64_t> start = fixed_integers(node, 0), limit = fixed_integers(node, 1),
                             delta = fixed_integers(node, 2);
  if (start.size() != 1 || limit.size() != 1 || delta.size() != 1 || delta[0] == 0) {
    fail(node, "burst folds Range of three scalar integers with a nonzero step");
  }
  SymbolicTensor out{{0}, {}};
  constexpr int64_t kMaxRange = int64_t{1} << 20;
  for (int64_t v = start[0]; delta[0] > 0 ? v < limit[0] : v > limit[0]; v += delta[0]) {
    if (static_cast<int64_t>(out.values.size()) == kMaxRange) fail(node, "makes more than 2^20 integers");
    out.values.push_back(fixed(v));
  }
  out.dims[0] = static_cast<int64_t>(out.values.size());
  bind_integers(node.output(0), std::move(out));
}

void Lowering::table_gather(const onnx::NodeProto& node) {
  ConstantTensor& table = constant_input(node, 0);
  if (table.dims.size() != 2 || attr_int(node, "axis", 0) != 0) {
    fail(node, fmt::format("gathers from a [{}] table on axis {}; burst reads rows of a [rows, D] table (nn.Embedding)",
                           fmt::join(table.dims, ", "), attr_int(node, "axis", 0)));
  }
  const Value& indices = input(node, 1);
  if (!indices.layer.empty()) {  // token ids [T] -> [T, D]
    LayerWeights weights;
    weights.parameters.push_back(initial(table));
    const std::string layer = add_layer(node, table.name, {indices.layer}, EmbeddingAttrs{table.dims[0], table.dims[1]});
    weights_[layer] = std::move(weights);
    embedding_of_table_[table.name] = layer;
    return;
  }
  // Rows by ids known at import (torch.arange(T), a buffer of token types): what a following
  // Add joins to the tokens, one row a token.
  const SymbolicTensor& rows = integer_input(node, 1);
  const std::vector<int64_t> index = fixed_integers(node, 1);
  // [T], or [1, T] (position_ids = arange(T).unsqueeze(0), Hugging Face's).
  bool one_row_a_token = !rows.dims.empty() && !index.empty() && rows.dims.back() == static_cast<int64_t>(index.size());
  for (const int64_t row : index) one_row_a_token = one_row_a_token && row >= 0 && row < table.dims[0];
  if (!one_row_a_token) {
    fail(node, fmt::format("gathers rows [{}] of table '{}'; burst reads token ids, or one row a token by ids known "
                           "at import (torch.arange(T)), from a table",
                           fmt::join(rows.dims, ", "), table.name));
  }
  Value value = input(node, 0);
  value.table_rows = index;
  values_[node.output(0)] = value;
}

void Lowering::constant_slice(const onnx::NodeProto& node) {
  // mask[:, :, :T, :T] of a float buffer: a smaller constant, computed here.
  const ConstantTensor& data = constant_input(node, 0);
  if (data.floats.size() != static_cast<size_t>(data.element_count())) {
    fail(node, fmt::format("slices '{}', whose values were not read", data.name));
  }
  const SliceWindow window = slice_window(node, data.dims);
  std::vector<float> values;
  for (const size_t source : window.sources(data.dims)) values.push_back(data.floats[source]);
  bind_float_table(node.output(0), window.dims, std::move(values));
}

void Lowering::constant_equal(const onnx::NodeProto& node) {
  // mask == 0 of a float table and a number: a boolean table, as integers 0 and 1.
  const int table_input = input(node, 0).constant != nullptr && input(node, 0).constant->is_float ? 0 : 1;
  const ConstantTensor& table = constant_input(node, table_input);
  const std::optional<double> value = folded_scalar(node, 1 - table_input);
  if (!value || table.floats.size() != static_cast<size_t>(table.element_count())) {
    fail(node, "burst compares a constant table with one number only");
  }
  SymbolicTensor out{table.dims, {}};
  for (const float v : table.floats) out.values.push_back(fixed(static_cast<double>(v) == *value ? 1 : 0));
  bind_integers(node.output(0), std::move(out));
}

void Lowering::select_numbers(const onnx::NodeProto& node) {
  // torch.where(mask, 0.0, finfo.min) of a folded boolean table: a float table, which an Add
  // to attention scores reads as an additive mask.
  const std::optional<double> a = folded_scalar(node, 1), b = folded_scalar(node, 2);
  if (!a || !b) fail(node, "burst selects between integers, or between two numbers by a condition known at import");
  const SymbolicTensor& condition = integer_input(node, 0);
  const std::vector<int64_t> holds = fixed_integers(node, 0);
  std::vector<float> values;
  values.reserve(holds.size());
  for (const int64_t h : holds) values.push_back(static_cast<float>(h != 0 ? *a : *b));
  bind_float_table(node.output(0), condition.dims, std::move(values));
}

void Lowering::causal_mask(const onnx::NodeProto& node, const std::string& scores, const std::vector<int64_t>& dims,
                           const std::function<bool(size_t)>& masked) {
  // The table `dims` (leading dims of 1, then [T, T]) over scores [..., T, T]: entry
  // (i, j) at i * T + j must be masked exactly where key j comes after query i.
  const Shape& shape = info_of(scores).output_shape;
  const size_t rank = dims.size();
  bool fits = shape.size() >= 2 && rank >= 2 && shape.back() == shape[shape.size() - 2] &&
              dims[rank - 1] == shape.back() && dims[rank - 2] == shape.back();
  for (size_t d = 0; fits && d + 2 < rank; ++d) fits = dims[d] == 1;  // one table for all
  if (!fits) {
    fail(node, fmt::format("masks scores {} with a [{}] table; burst reads one [T, T] causal table over scores [..., T, T]",
                           shape_to_string(shape), fmt::join(dims, ", ")));
  }
  const int64_t tokens = shape.back();
  for (int64_t i = 0; i < tokens; ++i) {
    for (int64_t j = 0; j < tokens; ++j) {
      const bool is_masked = masked(static_cast<size_t>(i * tokens + j));
      if (is_masked != (j > i)) {
        fail(node, fmt::format("masks query {} key {} {}; burst reads causal masks only (every later key masked, "
                               "no other)",
                               i, j, is_masked ? "out" : "in"));
      }
    }
  }
  add_layer(node, "", {scores}, CausalMaskAttrs{});
}

void Lowering::masked_fill(const onnx::NodeProto& node, int scores_input) {
  // Where(mask, -inf, scores) (masked_fill) or Where(keep, scores, -inf): scores [..., T, T].
  // The fill: -inf, or a number so low (masked_fill(-1e9), torch.finfo(float32).min) that its
  // exp underflows to 0 beside any score a model reaches: the softmax is then -inf's exactly.
  const std::string scores = layer_input(node, scores_input);
  const std::optional<double> fill = folded_scalar(node, 3 - scores_input);
  if (!fill || !(*fill <= kMaskedScore)) {
    fail(node, "selects between a computed tensor and something other than -inf (or <= -1e9); burst reads causal "
               "masks only");
  }
  const std::vector<int64_t> table = fixed_integers(node, 0);
  // Where takes its second input where the condition holds: masked entries are those whose
  // condition selects the fill.
  const bool masked_when = scores_input == 2;
  causal_mask(node, scores, integer_input(node, 0).dims,
              [&](size_t at) { return (table[at] != 0) == masked_when; });
}

void Lowering::additive_mask(const onnx::NodeProto& node, const std::string& scores, const ConstantTensor& table) {
  // scores + mask[:T, :T] of a buffer holding 0 and -inf (Llama's): -inf (or <= -1e9) masks.
  if (table.floats.size() != static_cast<size_t>(table.element_count())) {
    fail(node, fmt::format("adds '{}', whose values were not read", table.name));
  }
  for (const float v : table.floats) {
    if (v != 0 && !(v <= kMaskedScore)) {
      fail(node, fmt::format("adds a table holding {} to scores; burst reads additive causal masks of 0 and -inf only", v));
    }
  }
  causal_mask(node, scores, table.dims, [&](size_t at) { return table.floats[at] != 0; });
}

void Lowering::scalar_multiply(const onnx::NodeProto& node, const std::string& x, double factor) {
  if (!std::isfinite(factor)) fail(node, fmt::format("multiplies by {}", factor));
  add_layer(node, "", {x}, MulScalarAttrs{factor});
}

std::optional<double> Lowering::python_number(const onnx::NodeProto& node, int index) const {
  if (!has_input(node, index) || is_integer(node, index) || is_float_initializer(node, index)) return std::nullopt;
  const Value& value = input(node, index);
  if (value.constant == nullptr || value.constant->element_count() != 1) return std::nullopt;
  return folded_scalar(node, index);
}

void Lowering::power(const onnx::NodeProto& node) {
  const std::optional<double> exponent = python_number(node, 1);
  if (input(node, 0).layer.empty() || !exponent) return pattern_only(node);
  add_layer(node, "", {input(node, 0).layer}, PowScalarAttrs{*exponent});
}

void Lowering::reciprocal(const onnx::NodeProto& node) { add_layer(node, "", {layer_input(node, 0)}, ReciprocalAttrs{}); }

void Lowering::subtract(const onnx::NodeProto& node) {
  if (is_integer(node, 0) && is_integer(node, 1)) return integer_arithmetic(node);
  const std::optional<double> value = python_number(node, 1);
  if (input(node, 0).layer.empty() || !value) {
    fail(node, "subtracts tensors; burst reads Sub of integers (shapes), of a number from a tensor, and inside "
               "torch's LayerNorm");
  }
  add_layer(node, "", {input(node, 0).layer}, AddScalarAttrs{-*value});
}

}  // namespace burst::graph::onnx_import
