#pragma once
// Operator kinds and their attributes. A layer's attributes are a std::variant with one
// struct per op kind, so the op kind of a layer is the variant's active alternative.
// Defaults mirror PyTorch's (torch.nn) so a model written from a torchvision definition
// needs only the attributes it states there.
#include <optional>
#include <string>
#include <variant>

#include "burst/graph/shape.h"

namespace burst::graph {

// A model input: images ([C, H, W] float32) or token ids ([T] int64, each < vocab).
struct InputAttrs {
  Shape shape;
  DType dtype = DType::Float32;
  int64_t vocab = 0;  // token inputs only: ids lie in [0, vocab)
};

// torch.nn.Conv2d on [C, H, W] -> [out_channels, H', W'].
struct Conv2dAttrs {
  int64_t out_channels = 0;
  Pair kernel{0, 0};
  Pair stride{1, 1};
  Pair padding{0, 0};
  Pair dilation{1, 1};
  int64_t groups = 1;
  bool bias = true;
};

// torch.nn.BatchNorm2d over the channels of [C, H, W], or BatchNorm3d over those of volumes
// [C, D, H, W] (affine; running stats are buffers).
struct BatchNorm2dAttrs {
  double eps = 1e-5;
  double momentum = 0.1;
};

struct ReluAttrs {};
// torch.nn.GELU; approximate = "none" (erf) or "tanh" (GPT-2's).
struct GeluAttrs {
  std::string approximate = "none";
};

// torch.nn.MaxPool2d / AvgPool2d on [C, H, W]. An unset stride equals the kernel.
struct MaxPool2dAttrs {
  Pair kernel{0, 0};
  Pair stride{0, 0};
  Pair padding{0, 0};
  bool ceil_mode = false;
};
struct AvgPool2dAttrs {
  Pair kernel{0, 0};
  Pair stride{0, 0};
  Pair padding{0, 0};
  bool ceil_mode = false;
  bool count_include_pad = true;
};

// torch.nn.AdaptiveAvgPool2d: [C, H, W] -> [C, output.h, output.w].
struct AdaptiveAvgPool2dAttrs {
  Pair output{1, 1};
};

// torch.nn.Linear on the last dimension: [..., in] -> [..., out_features].
// `tied_to` names an embedding layer whose weight this layer shares (GPT-2's LM head):
// the weight is then counted once, at the embedding. `weight_in_out`: the weight is held
// [in, out] (Hugging Face's Conv1D, x @ W + b) instead of torch.nn.Linear's [out, in].
struct LinearAttrs {
  int64_t out_features = 0;
  bool bias = true;
  std::string tied_to;
  bool weight_in_out = false;
};

// Flattens every per-sample dimension: [d0, d1, ...] -> [d0 * d1 * ...]
// (torch.flatten(x, 1)).
struct FlattenAttrs {};

struct DropoutAttrs {
  double p = 0.5;
};

// Element-wise sum of two or more inputs of one shape (residual join).
struct AddAttrs {};

// Concatenation along a per-sample axis (0 = channels of [C, H, W]); other dims must agree.
struct ConcatAttrs {
  int64_t axis = 0;
};

// torch.nn.LayerNorm over the last dimension, with weight and bias; with `rms`, RMSNorm
// (Llama's: x * rsqrt(mean(x^2) + eps) * weight, a weight and no bias or mean).
struct LayerNormAttrs {
  double eps = 1e-5;
  bool rms = false;
};

// torch.nn.Embedding: int64 ids [T] -> [T, dim].
struct EmbeddingAttrs {
  int64_t num_embeddings = 0;
  int64_t dim = 0;
};

// Learned absolute positions added to [T, D]; a table of max_positions x D (T <= max_positions),
// held as [1, max_positions, D] (torchvision ViT's pos_embedding) or, with `table_2d`, as
// [max_positions, D] (an nn.Embedding of positions read with torch.arange, GPTs written by hand).
// Token t gets row t, or, with `row` >= 0, every token gets that one row (BERT's token types:
// row 0 of a [2, D] table).
struct PositionEmbeddingAttrs {
  int64_t max_positions = 0;
  bool table_2d = false;
  int64_t row = -1;
};

// Prepends one learned token (ViT's class token): [T, D] -> [T + 1, D].
struct ClassTokenAttrs {};

// Turns a feature map into a token sequence: [C, H, W] -> [H * W, C] (ViT after patchify).
struct ImageToTokensAttrs {};

// Selects one token: [T, D] -> [D] (ViT's classification head reads token 0).
struct TakeTokenAttrs {
  int64_t index = 0;
};

// Multi-head self-attention: [T, D] -> [T, D]. The defaults are torch.nn.MultiheadAttention
// with bias: a packed Q/K/V projection 3D x D + 3D and an output projection D x D + D, heads
// of D / heads features. The other fields describe today's decoders (docs/llm.md):
//  - kv_heads: grouped-query attention, heads / kv_heads query heads share each key and value
//    head (0: as many as heads). K and V are D x kv_heads x head_dim each.
//  - head_dim: features per head when not D / heads (Qwen3's 128 at D = 2048, 32 heads).
//  - qkv_bias, out_bias: whether the Q/K/V and the output projections have biases (Llama:
//    neither; Qwen2: Q/K/V only).
//  - rotary_theta > 0: rotary positions on queries and keys (rotary_dims of each head's
//    features, 0: all of them; GPT-NeoX rotates a quarter).
//  - qk_norm: an RMSNorm of head_dim on every query and key head (Qwen3).
//  - flash: the core runs as a fused kernel (FlashAttention, torch's SDPA): no T x T scores are
//    kept or moved through memory, and a causal core computes only the half it keeps.
//  - kv_lora_rank > 0: DeepSeek's multi-head latent attention. Q is D -> q_lora_rank -> heads x
//    head_dim (or D -> heads x head_dim with q_lora_rank 0), each low rank followed by an
//    RMSNorm; keys and values come from one D -> kv_lora_rank + rope_head_dim projection,
//    the latent normed and raised to heads x (head_dim - rope_head_dim + v_head_dim); the
//    rope_head_dim rotated features of K are shared by all heads.
//  - v_head_dim: features per value head when not head_dim (MLA's 128 beside 192).
struct SelfAttentionAttrs {
  int64_t heads = 0;
  bool causal = false;
  double dropout = 0.0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  bool qkv_bias = true;
  bool out_bias = true;
  double rotary_theta = 0.0;
  int64_t rotary_dims = 0;
  bool qk_norm = false;
  bool flash = false;
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

// A self_attention layer's per-head sizes on inputs of width D with the defaults above filled
// in: kv_heads (heads when unset), head_dim (D / heads when unset), v_head_dim (head_dim
// when unset). Shape inference checks that they fit together.
struct AttentionHeads {
  int64_t heads = 0, kv_heads = 0, head_dim = 0, v_head_dim = 0;
};
AttentionHeads attention_heads(const SelfAttentionAttrs& attrs, int64_t width);

// A mixture-of-experts feed-forward block on [T, D] -> [T, D] (Mixtral, Qwen-MoE, DeepSeek):
// a router D x experts (softmax, or DeepSeek's sigmoid, scores) sends each token to its top_k
// experts, each a SwiGLU MLP D -> expert_ffn -> D (gate, up and down projections, no bias);
// the outputs are summed weighted by the router's scores. shared_ffn > 0 adds an always-on
// SwiGLU MLP of that width (DeepSeek's shared experts together; Qwen2-MoE's shared expert,
// scaled by a sigmoid gate D x 1 when shared_gate). capacity_factor > 0 caps each expert at
// capacity_factor x T x top_k / experts tokens (the rest dropped); 0 is dropless.
struct MoeAttrs {
  int64_t experts = 0;
  int64_t top_k = 0;
  int64_t expert_ffn = 0;
  int64_t shared_ffn = 0;
  bool shared_gate = false;
  double capacity_factor = 0.0;
};

// Softmax cross-entropy against integer labels: logits [classes] or [T, classes] -> a
// scalar per sample. `weight` scales this loss in the total (Inception's aux loss: 0.4).
struct SoftmaxCrossEntropyAttrs {
  double weight = 1.0;
};

// torch.nn.Hardtanh: clamps to [min_val, max_val]; ReLU6 is Hardtanh(0, 6) (ONNX Clip).
struct HardtanhAttrs {
  double min_val = -1.0;
  double max_val = 1.0;
};

// Element-wise activations without attributes: torch.nn.Sigmoid, SiLU (x * sigmoid(x)),
// Hardswish (x * relu6(x + 3) / 6) and Hardsigmoid (relu6(x + 3) / 6).
struct SigmoidAttrs {};
struct SiluAttrs {};
struct HardswishAttrs {};
struct HardsigmoidAttrs {};

// Element-wise product of two inputs with broadcasting (squeeze-excitation's [C, H, W] x
// [C, 1, 1]): per-sample shapes of equal rank; each dim equal, or 1 in one of them.
struct MulAttrs {};

// Per-sample shape ops (the batch dim is never named; axes count from the first per-sample
// dim). Reshape keeps the element count: [d0, ...] -> `shape` (torch.reshape).
struct ReshapeAttrs {
  Shape shape;
};
// Permutes the per-sample dims: output dim i is input dim perm[i] (torch.permute).
struct TransposeAttrs {
  Shape perm;
};
// Elements [start, end) of one per-sample axis (torch.narrow; one output of torch.chunk).
struct SliceAttrs {
  int64_t axis = 0;
  int64_t start = 0;
  int64_t end = 0;
};
// Mean over per-sample axes (torch.mean(x, axes, keepdim)).
struct MeanAttrs {
  Shape axes;
  bool keepdims = false;
};

// torchvision's StochasticDepth(p, mode="row"): in training, each sample's whole input is
// kept with probability 1 - p and scaled by 1 / (1 - p), or zeroed (a residual branch
// dropped); identity in eval mode. Its draws follow the placement-invariant rule of dropout.
struct StochasticDepthAttrs {
  double p = 0.5;
};

// Batched matrix product of two computed inputs (torch.matmul per sample): [..., n, k] x
// [..., k, m] -> [..., n, m], the leading per-sample dims equal (attention's q @ k^T).
struct MatmulAttrs {};

// Softmax over the last per-sample axis (torch.softmax(x, -1): attention weights).
struct SoftmaxAttrs {};

// torch.nn.LeakyReLU: x for x >= 0, negative_slope x below (ONNX LeakyRelu's alpha).
struct LeakyReluAttrs {
  double negative_slope = 0.01;
};
// torch.nn.ELU: x for x > 0, alpha (exp(x) - 1) below (ONNX Elu).
struct EluAttrs {
  double alpha = 1.0;
};
// torch.nn.Tanh and torch.nn.Softplus with beta 1: log(1 + exp(x)), x itself above the
// threshold 20 where that equals x in float32 (ONNX Tanh, Softplus).
struct TanhAttrs {};
struct SoftplusAttrs {};

// A learned tensor multiplying the input (ConvNeXt's layer scale [C, 1, 1], any trainable
// initializer in a Mul): its one parameter has per-sample shape `shape`, broadcast against
// the input's trailing dims as numpy does (each dim 1 or the input's), initialised to ones.
// `weight_shape`, when given, is the parameter's own shape (as many elements) that a view
// makes `shape` (GroupNorm's weight [C] used as [C, 1, 1]).
struct ScaleAttrs {
  Shape shape;
  Shape weight_shape;
};

// A learned tensor added to the input, broadcast the same way (a per-channel bias
// nn.Parameter(torch.zeros(C, 1, 1)) added by hand; GroupNorm's bias), initialised to zeros.
struct ShiftAttrs {
  Shape shape;
  Shape weight_shape;
};

// torch.nn.PReLU: x for x >= 0, a learned slope times x below; one slope, or one a channel of
// [C, ...] (num_parameters = C).
struct PReluAttrs {
  int64_t num_parameters = 1;
};

// torch.erf element-wise.
struct ErfAttrs {};

// torch.nn.InstanceNorm1d/2d/3d on [C, ...]: each sample's channels normalised over their
// own elements (batch statistics in training and evaluation alike, no running statistics);
// with `affine`, a learned weight and bias [C]. GroupNorm exports as one on [groups, rest].
struct InstanceNormAttrs {
  double eps = 1e-5;
  bool affine = false;
};

// torch.nn.Upsample on [C, H, W] by whole factors: [C, H * scale.h, W * scale.w], "nearest"
// or "bilinear" (align_corners false or true).
struct UpsampleAttrs {
  Pair scale{2, 2};
  std::string mode = "nearest";
  bool align_corners = false;
};

// torch.nn.functional.pad of the per-sample dims: `pads` holds each dim's padding before,
// then each dim's after (ONNX's order, per sample); "constant" (with `value`), "reflect" or
// "replicate".
struct PadAttrs {
  Shape pads;
  std::string mode = "constant";
  double value = 0.0;
};

// torch.nn.ConvTranspose2d on [C, H, W] -> [out_channels, H', W'], H' = (H - 1) stride -
// 2 padding + dilation (kernel - 1) + output_padding + 1 (U-Net's up-sampling). Weight
// [C, out_channels / groups, kh, kw], bias [out_channels].
struct ConvTranspose2dAttrs {
  int64_t out_channels = 0;
  Pair kernel{0, 0};
  Pair stride{1, 1};
  Pair padding{0, 0};
  Pair output_padding{0, 0};
  Pair dilation{1, 1};
  int64_t groups = 1;
  bool bias = true;
};

// The input times a constant number (attention's q @ k^T * (1 / sqrt(d)), any Python float in
// a Mul or a Div): [...] -> [...].
struct MulScalarAttrs {
  double factor = 1.0;
};

// Element-wise arithmetic with a number, as users write norms by hand (RMSNorm's
// x * rsqrt(mean(x^2) + eps)): x^exponent, x + value, sqrt(x), 1 / x.
struct PowScalarAttrs {
  double exponent = 2.0;
};
struct AddScalarAttrs {
  double value = 0.0;
};
struct SqrtAttrs {};
struct ReciprocalAttrs {};

// Rotary position embeddings (RoPE, as Llama applies them to queries and keys) on
// [..., T, d], d even: x cos + rotate_half(x) sin, rotate_half(x) = cat(-x[..., d/2:],
// x[..., :d/2]); cos and sin of t * theta^(-2i/d) for position t and frequency i < d/2, each
// repeated twice along d, computed in float32 as transformers does.
struct RotaryAttrs {
  double theta = 10000.0;
};

// A causal mask on scores [..., T, T]: entry (i, j) with j > i (a later key) becomes -inf,
// the others pass (masked_fill of a lower-triangular table, as single-file GPTs write it).
struct CausalMaskAttrs {};

// torch.nn.Conv3d on volumes [C, D, H, W] -> [out_channels, D', H', W']; kernel, stride,
// padding and dilation hold 3 values each (depth, height, width). Weight
// [out_channels, C / groups, kd, kh, kw], bias [out_channels].
struct Conv3dAttrs {
  int64_t out_channels = 0;
  Shape kernel;
  Shape stride{1, 1, 1};
  Shape padding{0, 0, 0};
  Shape dilation{1, 1, 1};
  int64_t groups = 1;
  bool bias = true;
};

// torch.nn.MaxPool3d / AvgPool3d on [C, D, H, W]; 3 values each, an empty stride equals the kernel.
struct MaxPool3dAttrs {
  Shape kernel;
  Shape stride;
  Shape padding{0, 0, 0};
  bool ceil_mode = false;
};
struct AvgPool3dAttrs {
  Shape kernel;
  Shape stride;
  Shape padding{0, 0, 0};
  bool ceil_mode = false;
  bool count_include_pad = true;
};

// A broadcast of the input to a per-sample `shape` of the same rank, each input dim equal to
// the target's or 1 (torch's expand: grouped-query attention's keys and values repeated over
// the query heads of their group).
struct ExpandAttrs {
  Shape shape;
};

using Attrs =
    std::variant<InputAttrs, Conv2dAttrs, BatchNorm2dAttrs, ReluAttrs, GeluAttrs, MaxPool2dAttrs,
                 AvgPool2dAttrs, AdaptiveAvgPool2dAttrs, LinearAttrs, FlattenAttrs, DropoutAttrs,
                 AddAttrs, ConcatAttrs, LayerNormAttrs, EmbeddingAttrs, PositionEmbeddingAttrs,
                 ClassTokenAttrs, ImageToTokensAttrs, TakeTokenAttrs, SelfAttentionAttrs,
                 SoftmaxCrossEntropyAttrs, HardtanhAttrs, SigmoidAttrs, SiluAttrs, HardswishAttrs,
                 HardsigmoidAttrs, MulAttrs, ReshapeAttrs, TransposeAttrs, SliceAttrs, MeanAttrs,
                 StochasticDepthAttrs, MatmulAttrs, SoftmaxAttrs, LeakyReluAttrs, EluAttrs, TanhAttrs,
                 SoftplusAttrs, ScaleAttrs, ConvTranspose2dAttrs, MulScalarAttrs, CausalMaskAttrs, Conv3dAttrs,
                 MaxPool3dAttrs, AvgPool3dAttrs, PowScalarAttrs, AddScalarAttrs, SqrtAttrs, ReciprocalAttrs,
                 RotaryAttrs, ShiftAttrs, PReluAttrs, ErfAttrs, InstanceNormAttrs, UpsampleAttrs, PadAttrs,
                 ExpandAttrs, MoeAttrs>;

// Same order as Attrs' alternatives: OpKind(attrs.index()) is a layer's op.
enum class OpKind {
  Input,
  Conv2d,
  BatchNorm2d,
  Relu,
  Gelu,
  MaxPool2d,
  AvgPool2d,
  AdaptiveAvgPool2d,
  Linear,
  Flatten,
  Dropout,
  Add,
  Concat,
  LayerNorm,
  Embedding,
  PositionEmbedding,
  ClassToken,
  ImageToTokens,
  TakeToken,
  SelfAttention,
  SoftmaxCrossEntropy,
  Hardtanh,
  Sigmoid,
  Silu,
  Hardswish,
  Hardsigmoid,
  Mul,
  Reshape,
  Transpose,
  Slice,
  Mean,
  StochasticDepth,
  Matmul,
  Softmax,
  LeakyRelu,
  Elu,
  Tanh,
  Softplus,
  Scale,
  ConvTranspose2d,
  MulScalar,
  CausalMask,
  Conv3d,
  MaxPool3d,
  AvgPool3d,
  PowScalar,
  AddScalar,
  Sqrt,
  Reciprocal,
  Rotary,
  Shift,
  PRelu,
  Erf,
  InstanceNorm,
  Upsample,
  Pad,
  Expand,
  Moe,
};
inline constexpr int kOpKindCount = static_cast<int>(std::variant_size_v<Attrs>);

inline OpKind op_kind(const Attrs& attrs) { return static_cast<OpKind>(attrs.index()); }

// The op's name in model files and tables: "conv2d", "batchnorm2d", "self_attention", ...
const char* op_name(OpKind kind);
// Inverse of op_name; std::nullopt for an unknown name.
std::optional<OpKind> op_from_name(const std::string& name);
// Attributes of `kind` with PyTorch's defaults.
Attrs default_attrs(OpKind kind);

}  // namespace burst::graph
