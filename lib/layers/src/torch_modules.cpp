#include "torch_modules.h"

#include <cmath>
#include <limits>

#include <torch/torch.h>

namespace burst::layers {

namespace F = torch::nn::functional;

PositionEmbeddingImpl::PositionEmbeddingImpl(int64_t max_positions, int64_t dim, bool table_2d, int64_t row)
    : row_(row) {
  weight = register_parameter("weight", table_2d ? torch::empty({max_positions, dim}) : torch::empty({1, max_positions, dim}));
  torch::NoGradGuard no_grad;
  weight.normal_(0.0, 0.02);
}

torch::Tensor PositionEmbeddingImpl::forward(const torch::Tensor& x) {
  const int64_t tokens = x.size(1);
  const int64_t row_dim = weight.dim() - 2;
  if (row_ >= 0) return x + weight.narrow(row_dim, row_, 1);  // [B, T, D] + one row [1, D], broadcast
  return x + weight.narrow(row_dim, 0, tokens);  // [B, T, D] + [1, T, D] or [T, D]
}

InOutLinearImpl::InOutLinearImpl(int64_t in, int64_t out, bool with_bias) {
  weight = register_parameter("weight", torch::empty({in, out}));
  if (with_bias) bias = register_parameter("bias", torch::zeros({out}));
  torch::NoGradGuard no_grad;
  weight.normal_(0.0, 0.02);
}

torch::Tensor InOutLinearImpl::forward(const torch::Tensor& x) {
  // As Conv1D: the rows [N, in] times [in, out], the bias added by addmm.
  std::vector<int64_t> out_shape = x.sizes().vec();
  out_shape.back() = weight.size(1);
  const torch::Tensor rows = x.reshape({-1, weight.size(0)});
  const torch::Tensor y = bias.defined() ? torch::addmm(bias, rows, weight) : rows.matmul(weight);
  return y.view(out_shape);
}

torch::Tensor rotary_embedding(const torch::Tensor& x, double theta) {
  const int64_t tokens = x.size(-2), dim = x.size(-1);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(x.device());
  // inv_freq_i = 1 / theta^(2i / d), positions 0 .. T - 1, angles [T, d / 2] then [T, d].
  const torch::Tensor exponents = torch::arange(0, dim, 2, f32.dtype(torch::kLong)).to(torch::kFloat32) / dim;
  const torch::Tensor inv_freq = 1.0 / torch::pow(theta, exponents);
  const torch::Tensor angles = torch::arange(tokens, f32).unsqueeze(1) * inv_freq.unsqueeze(0);
  const torch::Tensor both = torch::cat({angles, angles}, -1);
  const torch::Tensor cos = both.cos().to(x.scalar_type()), sin = both.sin().to(x.scalar_type());
  const int64_t half = dim / 2;
  const torch::Tensor rotated = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos + rotated * sin;
}

ScaleImpl::ScaleImpl(std::vector<int64_t> shape, std::vector<int64_t> weight_shape, bool adds)
    : shape_(std::move(shape)), adds_(adds) {
  const std::vector<int64_t>& held = weight_shape.empty() ? shape_ : weight_shape;
  weight = register_parameter("weight", adds ? torch::zeros(held) : torch::ones(held));
}

torch::Tensor ScaleImpl::forward(const torch::Tensor& x) {
  const torch::Tensor w = weight.view(shape_);
  return adds_ ? x + w : x * w;
}

ClassTokenImpl::ClassTokenImpl(int64_t dim) {
  token = register_parameter("token", torch::zeros({1, 1, dim}));
}

torch::Tensor ClassTokenImpl::forward(const torch::Tensor& x) {
  const int64_t batch = x.size(0);
  const torch::Tensor tokens = token.expand({batch, 1, token.size(2)});  // [B, 1, D]
  return torch::cat({tokens, x}, 1);  // [B, T + 1, D]
}

TiedLinearImpl::TiedLinearImpl(torch::Tensor tied_weight, bool with_bias)
    : weight(std::move(tied_weight)) {
  if (with_bias) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(weight.size(1)));
    bias = register_parameter("bias", torch::empty({weight.size(0)}));
    torch::NoGradGuard no_grad;
    bias.uniform_(-bound, bound);
  }
}

torch::Tensor TiedLinearImpl::forward(const torch::Tensor& x) {
  return F::linear(x, weight, bias);  // [..., in] -> [..., out]
}

SelfAttentionImpl::SelfAttentionImpl(int64_t dim, int64_t heads, bool causal, double dropout)
    : heads_(heads), causal_(causal), dropout_(dropout) {
  in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * dim, dim}));
  in_proj_bias = register_parameter("in_proj_bias", torch::zeros({3 * dim}));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(in_proj_weight);
  out_proj->bias.zero_();
}

torch::Tensor SelfAttentionImpl::forward(const torch::Tensor& x, const RandomKey& key, graph::LayerId layer) {
  return out_proj->forward(attend(x, key, layer, 0));
}

torch::Tensor SelfAttentionImpl::attend(const torch::Tensor& x, const RandomKey& key, graph::LayerId layer,
                                        int64_t first_head) {
  const int64_t batch = x.size(0);
  const int64_t tokens = x.size(1);
  const int64_t head_dim = x.size(2) / heads_;
  const int64_t heads_here = in_proj_weight.size(0) / (3 * head_dim);

  // Packed projection, then split into heads: [B, T, 3 n D/H] -> 3 x [B, n, T, D/H].
  const std::vector<torch::Tensor> qkv = F::linear(x, in_proj_weight, in_proj_bias).chunk(3, -1);
  auto split_heads = [&](const torch::Tensor& t) {
    return t.reshape({batch, tokens, heads_here, head_dim}).transpose(1, 2);
  };
  const torch::Tensor q = split_heads(qkv[0]) / std::sqrt(static_cast<double>(head_dim));
  const torch::Tensor k = split_heads(qkv[1]);
  const torch::Tensor v = split_heads(qkv[2]);

  torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1));  // [B, n, T, T]
  if (causal_) {
    // Position i attends to positions <= i: mask the strict upper triangle.
    const torch::Tensor future =
        torch::ones({tokens, tokens}, torch::dtype(torch::kBool).device(x.device())).triu(1);
    scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  }
  torch::Tensor weights = torch::softmax(scores, -1);
  if (dropout_ > 0 && is_training()) {
    if (heads_here == heads_) {
      weights = sample_dropout(weights, dropout_, key, layer);  // [B, H, T, T]: per sample
    } else {
      // A sample's weights [n, T, T] are elements [h0 T T, (h0 + n) T T) of its [H, T, T].
      RandomKey slice = key;
      slice.features = heads_ * tokens * tokens;
      slice.feature_begin = first_head * tokens * tokens;
      weights = sample_dropout(weights.reshape({batch, 1, -1}), dropout_, slice, layer).view_as(weights);
    }
  }

  // Weighted values, heads joined again: [B, n, T, D/H] -> [B, T, n D/H].
  return torch::matmul(weights, v).transpose(1, 2).reshape({batch, tokens, heads_here * head_dim});
}

SoftmaxCrossEntropyImpl::SoftmaxCrossEntropyImpl(double weight) : weight_(weight) {}

torch::Tensor SoftmaxCrossEntropyImpl::forward(const torch::Tensor& logits,
                                               const torch::Tensor& labels) {
  const int64_t batch = logits.size(0);
  const int64_t classes = logits.size(-1);
  // One loss per label: [B * T] (T = 1 for [B, C] logits).
  const torch::Tensor per_label =
      F::cross_entropy(logits.reshape({-1, classes}), labels.reshape({-1}),
                       F::CrossEntropyFuncOptions().reduction(torch::kNone));
  return per_label.view({batch, -1}).mean(1) * weight_;  // [B]
}

}  // namespace burst::layers
