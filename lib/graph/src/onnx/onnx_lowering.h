#pragma once
// Internal: turns the nodes of a checked, topologically ordered ONNX graph into burst
// layers, one handler per ONNX op type (onnx_ops.cpp), with their initial weights.
#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <onnx/onnx_pb.h>

#include "burst/graph/onnx_import.h"
#include "onnx/onnx_tensors.h"

namespace burst::graph::onnx_import {

// An integer known at import time: batch x (batch size) + constant. Shape arithmetic on a
// dynamic batch gives such values (dim 0 of Shape(x) is the batch size itself).
struct SymbolicInt {
  int64_t batch = 0;
  int64_t constant = 0;
  bool operator==(const SymbolicInt& other) const { return batch == other.batch && constant == other.constant; }
};
// A size that does not depend on the batch.
inline SymbolicInt fixed(int64_t value) { return SymbolicInt{0, value}; }
// Whether an attribute or constant `a` is `b` up to float32 rounding (1e-6 relative).
inline bool near(double a, double b) { return std::abs(a - b) <= 1e-6 * std::max(1.0, std::abs(b)); }

// For messages: "4", "batch", "12*batch", "2*batch+1"; a shape "[5, batch, 768]".
std::string symbolic_text(const SymbolicInt& value);
std::string symbolic_text(const std::vector<SymbolicInt>& shape);

// An integer tensor of SymbolicInts (shapes, indices, axes), row-major.
struct SymbolicTensor {
  std::vector<int64_t> dims;
  std::vector<SymbolicInt> values;
};

struct Trace;

// "layer1.0.conv1.weight" -> "layer1.0.conv1"; "" for an exporter's made-up name
// ("onnx::Conv_123") or one without the suffix.
std::string state_dict_prefix(const std::string& weight);

// What an ONNX tensor name stands for while lowering.
struct Value {
  std::string layer;                    // the output of this burst layer, or
  ConstantTensor* constant = nullptr;   // a constant (initializer or Constant node), and/or
  std::optional<SymbolicTensor> ints;   // integers known at import time (integer constants too)
  std::string not_computed;             // else why burst has no such tensor, or
  std::shared_ptr<const Trace> trace;   // a tensor whose batch is not its first dim
  bool transposed = false;              // constant: a matrix read transposed (Transpose perm 1,0)
  bool over_batch = false;              // constant: Expand-ed to [batch, ...] (ViT's class token)
  std::optional<std::vector<int64_t>> table_rows;  // constant: these rows of it (Gather by constant ids)
  std::vector<int64_t> view_dims;       // a learned initializer seen with these dims (unsqueezed)
};

// A tensor whose batch is not its first dim: torch exports nn.MultiheadAttention
// sequence-first ([T, B, D], heads merged into the batch as [B * heads, T, d]). The importer
// follows such tensors op by op, with their whole shapes (the batch included, as SymbolicInt),
// and recognises the computation as a whole when a Transpose puts the batch first again
// (onnx_attention.cpp).
struct Trace {
  enum class Op { Start, Linear, Slice, Reshape, Transpose, Scale, MatMul, Softmax };
  Op op = Op::Start;
  std::vector<std::shared_ptr<const Trace>> inputs;
  std::vector<SymbolicInt> shape;  // every dim, the batch's included
  std::string layer;               // Start: the batch-first layer transposed
  std::vector<int64_t> perm;       // Start, Transpose
  int64_t axis = 0, start = 0, end = 0;  // Slice
  double factor = 1;               // Scale: multiplies by
  ConstantTensor* weight = nullptr;  // Linear: [out, in] (torch's layout) when weight_as_torch,
  bool weight_as_torch = false;      // else [in, out]
  ConstantTensor* bias = nullptr;    // Linear: [out], or none
  std::string node;                // the ONNX node, for messages
};

class Lowering {
 public:
  // `nodes` in topological order; `initializers` decoded (decode_initializers);
  // `base_dir` resolves external data of Constant nodes.
  Lowering(const onnx::GraphProto& graph, std::vector<const onnx::NodeProto*> nodes,
           std::deque<ConstantTensor> initializers, std::string base_dir);

  // The layers (graph inputs, every node, a loss per graph output) and their weights.
  std::vector<LayerSpec> lower();
  std::map<std::string, LayerWeights> take_weights() { return std::move(weights_); }
  // The burst layer an ONNX tensor became, for the shape check ("" if none).
  std::string layer_of(const std::string& tensor) const;

  // The ONNX op types a handler exists for.
  static bool supports(const std::string& op_type);

  // Handlers, one per op type (onnx_ops.cpp).
  void conv(const onnx::NodeProto& node);
  void conv_transpose(const onnx::NodeProto& node);
  // Volumes [C, D, H, W] (onnx_volumes.cpp): the 3-D forms of Conv, MaxPool, AveragePool and
  // GlobalAveragePool, which the handlers above hand over when their input is one.
  bool is_volume(const std::string& layer) const;
  void conv3d(const onnx::NodeProto& node);
  void max_pool3d(const onnx::NodeProto& node);
  void average_pool3d(const onnx::NodeProto& node);
  void global_average_pool3d(const onnx::NodeProto& node);
  // A convolution layer's weight (checked against `weight_shape`, `layout` naming it) and,
  // as input 2, its bias [out_channels].
  void conv_weights(const onnx::NodeProto& node, const std::string& layer, ConstantTensor& weight,
                    const std::vector<int64_t>& weight_shape, const char* layout, int64_t out_channels);
  void batch_normalization(const onnx::NodeProto& node);
  void gemm(const onnx::NodeProto& node);
  void matmul(const onnx::NodeProto& node);
  void add(const onnx::NodeProto& node);
  void mul(const onnx::NodeProto& node);
  void max_pool(const onnx::NodeProto& node);
  void average_pool(const onnx::NodeProto& node);
  void global_average_pool(const onnx::NodeProto& node);
  void flatten(const onnx::NodeProto& node);
  void concat(const onnx::NodeProto& node);
  void dropout(const onnx::NodeProto& node);
  void clip(const onnx::NodeProto& node);
  void hard_sigmoid(const onnx::NodeProto& node);
  void element_wise(const onnx::NodeProto& node);  // Relu, Sigmoid, HardSwish
  void layer_normalization(const onnx::NodeProto& node);  // opset 17
  void identity(const onnx::NodeProto& node);
  void pad(const onnx::NodeProto& node);
  // Normalisations, activations and resampling (onnx_norms.cpp).
  void instance_normalization(const onnx::NodeProto& node);
  void prelu(const onnx::NodeProto& node);
  void erf(const onnx::NodeProto& node);  // torch.erf outside GELU
  void resize(const onnx::NodeProto& node);
  void padding(const onnx::NodeProto& node);  // a Pad that no pooling layer takes
  // Shape arithmetic, folded at import (onnx_shape_ops.cpp), and the shape ops on layers.
  void shape(const onnx::NodeProto& node);
  void gather(const onnx::NodeProto& node);
  void unsqueeze(const onnx::NodeProto& node);
  void squeeze(const onnx::NodeProto& node);
  void cast(const onnx::NodeProto& node);
  void integer_arithmetic(const onnx::NodeProto& node);  // Add, Sub, Mul, Div, Mod of integers
  int64_t integer_modulo(const onnx::NodeProto& node, const SymbolicInt& x, const SymbolicInt& y);
  void reshape(const onnx::NodeProto& node);
  void transpose(const onnx::NodeProto& node);
  void slice(const onnx::NodeProto& node);
  void split(const onnx::NodeProto& node);  // one slice layer per output
  void reduce_mean(const onnx::NodeProto& node);
  void constant(const onnx::NodeProto& node);
  // Integers only, folded at import: ConstantOfShape, Equal, Where (onnx_shape_ops.cpp).
  void constant_of_shape(const onnx::NodeProto& node);
  void equal(const onnx::NodeProto& node);
  void where(const onnx::NodeProto& node);
  void expand(const onnx::NodeProto& node);
  void integer_expand(const onnx::NodeProto& node);
  void gather_elements(const onnx::NodeProto& node);  // integers known at import
  // Less, LessOrEqual, Greater, GreaterOrEqual, And, Or of integers, broadcast.
  void integer_comparison(const onnx::NodeProto& node);
  // Where(condition, a number, a number): a float table of the condition's shape (a mask).
  void select_numbers(const onnx::NodeProto& node);
  void div(const onnx::NodeProto& node);      // integers, GELU's x / sqrt(2), attention's scale
  void softmax(const onnx::NodeProto& node);  // over the last dim
  // Language models written by hand (onnx_language.cpp): Range of integers (torch.arange),
  // Gather from a float table (nn.Embedding of token ids, or of positions 0 .. T - 1),
  // Slice and Equal of a float constant (a causal mask buffer), Where of a computed tensor
  // (masked_fill of scores by a causal mask), and a computed tensor times or over a number.
  void range(const onnx::NodeProto& node);
  void table_gather(const onnx::NodeProto& node);
  void constant_slice(const onnx::NodeProto& node);
  void constant_equal(const onnx::NodeProto& node);
  void masked_fill(const onnx::NodeProto& node, int scores_input);
  void additive_mask(const onnx::NodeProto& node, const std::string& scores, const ConstantTensor& table);
  // Appends a causal_mask layer on `scores` after checking that `masked(i * T + j)` holds
  // exactly for j > i of a table of `dims`; refuses any other mask.
  void causal_mask(const onnx::NodeProto& node, const std::string& scores, const std::vector<int64_t>& dims,
                   const std::function<bool(size_t)>& masked);
  void scalar_multiply(const onnx::NodeProto& node, const std::string& x, double factor);
  // Float tables folded at import (onnx_constant_fold.cpp): rotary embeddings' cos and sin.
  // The fold_ functions return false where the inputs are not all constants.
  const ConstantTensor* float_table(const onnx::NodeProto& node, int index) const;  // nullptr if none
  void bind_float_table(const std::string& tensor, std::vector<int64_t> dims, std::vector<float> values);
  bool fold_float_arithmetic(const onnx::NodeProto& node);  // Mul, Add, Sub, Div
  void fold_float_function(const onnx::NodeProto& node);    // Cos, Sin, Neg
  void negate(const onnx::NodeProto& node);                 // Neg: of a tensor, x times -1
  bool fold_integers_to_floats(const onnx::NodeProto& node);  // Cast
  bool fold_float_unsqueeze(const onnx::NodeProto& node);
  // `dims` with the size-1 dims an Unsqueeze node inserts.
  std::vector<int64_t> unsqueezed(const onnx::NodeProto& node, std::vector<int64_t> dims) const;
  bool fold_float_concat(const onnx::NodeProto& node);
  // Rotary embeddings (onnx_rotary.cpp): q * cos + rotate_half(q) * sin from the Mul of q
  // (input `x_input`) and cos, one rotary layer; false where the nodes differ.
  bool fuse_rotary(const onnx::NodeProto& mul, int x_input);
  // The base theta whose rotary tables cos and sin [T, d] are, or nullopt.
  std::optional<double> rotary_theta(const ConstantTensor& cos, const ConstantTensor& sin, int64_t tokens,
                                     int64_t dim) const;
  // Lowers the shape arithmetic that computes `tensor` now, before its turn (a pattern that
  // needs bounds the file computes later); the nodes are skipped in order.
  void lower_ahead(const std::string& tensor, int depth);
  using Handler = void (Lowering::*)(const onnx::NodeProto&);
  static Handler handler_of(const std::string& op_type);
  // Element-wise arithmetic of a computed tensor with a Python number, as norms written by
  // hand use it (RMSNorm: x * rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)): Pow, Sqrt,
  // Reciprocal, and Add or Sub of a number (onnx_language.cpp).
  void power(const onnx::NodeProto& node);
  void reciprocal(const onnx::NodeProto& node);
  void subtract(const onnx::NodeProto& node);  // integers, or a tensor minus a number
  // Input `index` of `node` as a Python number (a Constant node or a folded scalar, not a
  // learned initializer), nullopt otherwise.
  std::optional<double> python_number(const onnx::NodeProto& node, int index) const;
  // The rows of the smallest embedding table that token input `input` is read by (its vocabulary).
  int64_t token_vocab(const std::string& input) const;
  // Pow, Sqrt, Erf: read only inside the patterns above; alone they are refused.
  void pattern_only(const onnx::NodeProto& node);
  // Float scalars computed from shapes, folded at import (onnx_scalars.cpp): Sqrt of a
  // constant, and the constant cases of Div and Cast (false: not constants).
  void sqrt(const onnx::NodeProto& node);
  bool fold_scalar_division(const onnx::NodeProto& node);
  bool fold_scalar_cast(const onnx::NodeProto& node);

 private:
  // Inputs of `node`: i must exist and be non-empty unless optional.
  bool has_input(const onnx::NodeProto& node, int index) const;
  const Value& input(const onnx::NodeProto& node, int index) const;
  std::string layer_input(const onnx::NodeProto& node, int index) const;
  ConstantTensor& constant_input(const onnx::NodeProto& node, int index) const;
  bool is_integer(const onnx::NodeProto& node, int index) const;
  const SymbolicTensor& integer_input(const onnx::NodeProto& node, int index) const;
  // The integer input's values, which must not depend on the batch size.
  std::vector<int64_t> fixed_integers(const onnx::NodeProto& node, int index) const;
  void bind_integers(const std::string& tensor, SymbolicTensor value);
  const LayerInfo& info_of(const std::string& layer) const;
  LayerSpec& layer_named(const std::string& layer);
  // How many nodes and graph outputs read tensor `name`.
  int uses(const std::string& name) const;
  // Refuses a tensor's shape unless it is `expected`, naming the node and the tensor.
  void require_shape(const onnx::NodeProto& node, const InitialTensor& tensor,
                     const std::vector<int64_t>& expected, const char* why) const;
  // Refuses a consumed output of `node` past the first (BatchNorm's statistics, masks).
  void only_first_output_used(const onnx::NodeProto& node, const std::string& what);

  // Appends `spec` (renamed "<name>_2", "_3", ... if the name is taken), inferring its
  // shapes at once; returns the name it got.
  std::string append(LayerSpec spec);
  // Appends a layer computing `node`'s first output; the name comes from `weight` (its
  // state_dict prefix) when there is one, else from the node. Shapes are inferred at once.
  std::string add_layer(const onnx::NodeProto& node, const std::string& weight,
                        std::vector<std::string> inputs, Attrs attrs);
  // The same with the layer's name given (a fused pattern's, a weight's own name).
  std::string add_named_layer(const onnx::NodeProto& node, std::string name,
                              std::vector<std::string> inputs, Attrs attrs);
  void bind_layer(const std::string& tensor, const std::string& layer);
  void bind_constant(ConstantTensor* tensor);  // integer constants get their ints too
  void bind_float_scalar(const std::string& tensor, double value);  // a folded float scalar
  // Input `index` as one number known at import: a batch-independent integer or a float
  // scalar constant; nullopt otherwise.
  std::optional<double> folded_scalar(const onnx::NodeProto& node, int index) const;
  // A Slice node's inputs, starts, ends, axes (default: 0, 1, ...) and steps (default 1).
  struct SliceArguments {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  SliceArguments slice_arguments(const onnx::NodeProto& node) const;
  // What a Slice node takes of a constant of `dims`: each dim's first index and step, and the
  // output dims; sources() lists the elements taken, row-major.
  struct SliceWindow {
    std::vector<int64_t> first, step, dims;
    std::vector<size_t> sources(const std::vector<int64_t>& data_dims) const;
  };
  SliceWindow slice_window(const onnx::NodeProto& node, const std::vector<int64_t>& dims) const;
  // Integers sliced along their axes (shape arithmetic; Slice of an integer buffer).
  void integer_slice(const onnx::NodeProto& node);
  // A weight's initial tensor; its values move out of the constant when no other node reads it.
  InitialTensor initial(ConstantTensor& tensor, std::vector<int64_t> shape = {});
  // A linear layer's weight in torch's [out, in], from [out, in] (as_torch) or [in, out].
  InitialTensor torch_linear_weight(ConstantTensor& weight, bool as_torch);
  [[noreturn]] void fail(const onnx::NodeProto& node, const std::string& reason) const;

  void lower_inputs();
  void lower_outputs();
  // The per-sample shape [T] of the model's token input; nullptr if it takes none.
  const Shape* token_input_shape() const;

  // Multi-node patterns (onnx_fusions.cpp). Each starts at the pattern's first node, checks
  // every node of it and that nothing else reads its inner tensors, then appends one layer,
  // binds the pattern's last output and marks its other nodes done. False: no match.
  bool fuse_layer_norm(const onnx::NodeProto& mean);  // ReduceMean, Sub, Pow, ... (opset < 17)
  bool fuse_gelu(const onnx::NodeProto& div);         // x * (1 + erf(x / sqrt 2)) * 0.5
  void class_token(const onnx::NodeProto& concat);    // Concat(Expand(token), x) on axis 1
  // x [T, D] + table [1, T', D] (ViT's) or `rows` of a table [T', D] (table_2d): one per token.
  void position_embedding(const onnx::NodeProto& add, const std::string& x, ConstantTensor& table, bool table_2d,
                          const std::vector<int64_t>& rows = {});
  // Whether input `index` of `node` is a float initializer (a model's trainable tensor: torch
  // exports parameters as initializers, Python numbers as Constant nodes).
  bool is_float_initializer(const onnx::NodeProto& node, int index) const;
  // x * a learned tensor (ConvNeXt's layer scale), or with `adds` x + one (a bias added by
  // hand): a scale or shift layer named after it, shaped as input `index` of `node` is (an initializer, or a
  // view of one: learned_view).
  void learned_tensor(const onnx::NodeProto& node, const std::string& x, int index, bool adds);
  void learned_view(const onnx::NodeProto& unsqueeze);  // weight.unsqueeze(...) of an initializer
  void take_token(const onnx::NodeProto& gather);     // Gather(x, i) on the token axis
  // The one node reading `tensor` if it is of `op_type` and no graph output reads it.
  const onnx::NodeProto* only_reader(const std::string& tensor, const char* op_type) const;
  // The value of a scalar constant, lowered or not yet (a Constant node later in the file).
  std::optional<double> scalar_value(const std::string& tensor) const;
  // `node`'s input that is not `tensor` (of a two-input node reading it), "" if none.
  static std::string other_input(const onnx::NodeProto& node, const std::string& tensor);

  // Sequence-first tensors (onnx_attention.cpp).
  void trace_transpose(const onnx::NodeProto& node, const std::vector<int64_t>& perm);
  void trace_op(const onnx::NodeProto& node);  // any other node reading a trace
  void trace_view(const onnx::NodeProto& node);  // Slice, Unsqueeze, Squeeze, Gather of a trace
  void bind_trace(const std::string& tensor, Trace trace);
  bool reads_trace(const onnx::NodeProto& node) const;
  // Appends the layer a trace that puts the batch first again computes (multi-head
  // self-attention) and returns its name; refuses any other computation.
  std::string close_trace(const onnx::NodeProto& node, const Trace& closing);
  // Rows of a batch-first tensor: a Reshape whose target merges the batch into its first dim
  // starts a trace (trace_flatten); a Gemm on it and a Reshape back to the input's leading
  // dims close it as one linear layer (close_flattened_linear): Hugging Face's Conv1D.
  bool merges_batch(const onnx::NodeProto& reshape) const;
  void trace_flatten(const onnx::NodeProto& reshape);
  std::string close_flattened_linear(const onnx::NodeProto& node, const Trace& closing);

  const onnx::GraphProto& graph_;
  std::vector<const onnx::NodeProto*> nodes_;
  std::string base_dir_;

  std::vector<LayerSpec> layers_;
  std::unordered_map<std::string, LayerInfo> infos_;  // by layer name, as layers_ grow
  std::unordered_map<std::string, size_t> layer_index_;  // by layer name, into layers_
  std::map<std::string, LayerWeights> weights_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_map<std::string, int> uses_;
  std::unordered_map<std::string, std::vector<const onnx::NodeProto*>> readers_;  // by tensor
  std::unordered_map<std::string, const onnx::NodeProto*> producers_;             // by tensor
  std::unordered_set<const onnx::NodeProto*> fused_;  // nodes a fused pattern computed already
  std::deque<ConstantTensor> constants_;  // stable addresses for Value::constant
  // The embedding layer that owns each table (by initializer name): a MatMul with the same
  // table transposed is the tied LM head.
  std::unordered_map<std::string, std::string> embedding_of_table_;
  // Zero padding [h, w] of a Pad that only average pools read, by the Pad's output: the
  // pools take it as their own (count_include_pad), as torch's avg_pool2d(padding=p).
  std::unordered_map<std::string, std::pair<int64_t, int64_t>> pool_pads_;
};

}  // namespace burst::graph::onnx_import
