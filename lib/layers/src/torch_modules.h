#pragma once
// torch::nn modules for the graph ops torch.nn has no module for (or none that is
// batch-first): learned positions, ViT's class token, a tied linear, multi-head
// self-attention and a per-sample cross-entropy. All tensors are batch-first.
#include <cstdint>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "burst/layers/sample_random.h"

namespace burst::layers {

// Learned absolute positions: a table [max_positions, D]; forward adds its first T rows.
// Initialised N(0, 0.02), as torchvision's ViT and GPT-2 do.
class PositionEmbeddingImpl : public torch::nn::Module {
 public:
  PositionEmbeddingImpl(int64_t max_positions, int64_t dim, bool table_2d = false, int64_t row = -1);
  // x [B, T, D] -> x + weight[:, 0:T] (broadcast over B), [B, T, D].
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;  // [1, max_positions, D] (torchvision ViT's pos_embedding), or [max_positions, D]

 private:
  int64_t row_;  // every token's row; -1: row t for token t
};
TORCH_MODULE(PositionEmbedding);

// A linear layer whose weight is held [in, out] (Hugging Face's Conv1D in GPT-2), so its
// state_dict keeps that layout: x @ weight + bias as addmm of the rows, [..., in] -> [..., out].
// Initialised as Conv1D: weight N(0, 0.02), bias 0.
class InOutLinearImpl : public torch::nn::Module {
 public:
  InOutLinearImpl(int64_t in, int64_t out, bool bias);
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;  // [in, out]
  torch::Tensor bias;    // [out], or undefined
};
TORCH_MODULE(InOutLinear);

// Rotary position embeddings on x [B, ..., T, d] (graph::RotaryAttrs): cos and sin computed
// in float32 as transformers' LlamaRotaryEmbedding does, then in x's dtype.
torch::Tensor rotary_embedding(const torch::Tensor& x, double theta);

// ViT's class token: one learned token [1, 1, D] (torchvision's shape, initialised to
// zeros as torchvision does) prepended to every sequence.
// A learned tensor times the input (or, with `adds`, plus it): weight of `weight_shape`
// (torch's state_dict shape; empty: `shape`), ones at first (zeros when it adds), viewed as
// the per-sample `shape`; broadcasting right-aligns it against [B, ...].
class ScaleImpl : public torch::nn::Module {
 public:
  ScaleImpl(std::vector<int64_t> shape, std::vector<int64_t> weight_shape = {}, bool adds = false);
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;

 private:
  std::vector<int64_t> shape_;
  bool adds_ = false;
};
TORCH_MODULE(Scale);

class ClassTokenImpl : public torch::nn::Module {
 public:
  explicit ClassTokenImpl(int64_t dim);
  // x [B, T, D] -> [B, T + 1, D]; row 0 of every sample is the token.
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor token;  // [1, 1, D]
};
TORCH_MODULE(ClassToken);

// A linear layer whose weight [out, in] belongs to another layer (GPT-2's LM head reuses
// the token embedding). Only the bias, when present, is this module's parameter; it is
// initialised like torch.nn.Linear's, uniform in +-1/sqrt(in).
class TiedLinearImpl : public torch::nn::Module {
 public:
  TiedLinearImpl(torch::Tensor weight, bool bias);
  // x [..., in] -> x weight^T + bias, [..., out].
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;  // [out, in], not registered: counted at its owner
  torch::Tensor bias;    // [out] or undefined
};
TORCH_MODULE(TiedLinear);

// Multi-head self-attention with the parameters and initialisation of
// torch.nn.MultiheadAttention(D, heads, bias=True) — packed in_proj_weight [3D, D] (Xavier
// uniform), in_proj_bias [3D] (zeros), out_proj Linear(D, D) (bias zeros) — but batch-first
// and with an optional causal mask (GPT-2). Dropout applies to the attention weights in
// training mode, drawn per sample by `key` and `layer` (sample_random.h).
class SelfAttentionImpl : public torch::nn::Module {
 public:
  SelfAttentionImpl(int64_t dim, int64_t heads, bool causal, double dropout);
  // x [B, T, D] -> [B, T, D].
  torch::Tensor forward(const torch::Tensor& x, const RandomKey& key, graph::LayerId layer);
  // The attention of the heads this module holds, joined, before out_proj: x [B, T, D] ->
  // [B, T, n x D/H] for n heads. Whole, n = H; as part of a heads split (tensor_parallel.h)
  // in_proj holds the rows of heads [first_head, first_head + n), and attention dropout
  // draws each weight by its index among all H heads' weights.
  torch::Tensor attend(const torch::Tensor& x, const RandomKey& key, graph::LayerId layer, int64_t first_head);
  int64_t heads() const { return heads_; }

  torch::Tensor in_proj_weight;  // [3D, D]: rows 0..D-1 make queries, then keys, then values
  torch::Tensor in_proj_bias;    // [3D]
  torch::nn::Linear out_proj{nullptr};

 private:
  int64_t heads_;
  bool causal_;
  double dropout_;
};
TORCH_MODULE(SelfAttention);

// Softmax cross-entropy against integer labels, one loss per sample, scaled by the loss's
// weight (Inception's aux loss: 0.4). No parameters.
//
// The value per sample is the cross-entropy of its logits, averaged over its T tokens for
// [B, T, C] logits. forward() returns these per-sample losses [B] and does not reduce over the
// batch: the batch a device holds is a slice of the global batch, so the caller sums them and
// divides by the *global* batch (with every loss layer of the model added in):
//   loss = sum over loss layers and samples / global_batch,
// which equals torch.nn.functional.cross_entropy(..., reduction="mean") on one device over the
// whole batch (mean over all B·T tokens, since every sample has the same T).
class SoftmaxCrossEntropyImpl : public torch::nn::Module {
 public:
  explicit SoftmaxCrossEntropyImpl(double weight);
  // logits [B, C] with labels int64 [B], or logits [B, T, C] with labels [B, T] -> [B].
  torch::Tensor forward(const torch::Tensor& logits, const torch::Tensor& labels);

 private:
  double weight_;
};
TORCH_MODULE(SoftmaxCrossEntropy);

}  // namespace burst::layers
