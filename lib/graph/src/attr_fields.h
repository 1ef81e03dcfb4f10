#pragma once
// Internal: the one list of every op's attributes, shared by the JSON reader and writer.
// for_each_field(attrs, visit) calls visit(key, field, presence) for each attribute.
#include "burst/graph/op.h"

namespace burst::graph {

enum class Presence {
  Required,       // must appear in a model file
  Optional,       // may be omitted; PyTorch's default applies; always written
  OmitIfDefault,  // may be omitted; written only when not the default ("unset")
};

template <typename Visit> void for_each_field(InputAttrs& a, Visit&& v) {
  v("shape", a.shape, Presence::Required);
  v("dtype", a.dtype, Presence::Optional);
  v("vocab", a.vocab, Presence::OmitIfDefault);
}
template <typename Visit> void for_each_field(Conv2dAttrs& a, Visit&& v) {
  v("out_channels", a.out_channels, Presence::Required);
  v("kernel", a.kernel, Presence::Required);
  v("stride", a.stride, Presence::Optional);
  v("padding", a.padding, Presence::Optional);
  v("dilation", a.dilation, Presence::Optional);
  v("groups", a.groups, Presence::Optional);
  v("bias", a.bias, Presence::Optional);
}
template <typename Visit> void for_each_field(ConvTranspose2dAttrs& a, Visit&& v) {
  v("out_channels", a.out_channels, Presence::Required);
  v("kernel", a.kernel, Presence::Required);
  v("stride", a.stride, Presence::Optional);
  v("padding", a.padding, Presence::Optional);
  v("output_padding", a.output_padding, Presence::Optional);
  v("dilation", a.dilation, Presence::Optional);
  v("groups", a.groups, Presence::Optional);
  v("bias", a.bias, Presence::Optional);
}
template <typename Visit> void for_each_field(BatchNorm2dAttrs& a, Visit&& v) {
  v("eps", a.eps, Presence::Optional);
  v("momentum", a.momentum, Presence::Optional);
}
template <typename Visit> void for_each_field(ReluAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(GeluAttrs& a, Visit&& v) {
  v("approximate", a.approximate, Presence::Optional);
}
template <typename Visit> void for_each_field(MaxPool2dAttrs& a, Visit&& v) {
  v("kernel", a.kernel, Presence::Required);
  v("stride", a.stride, Presence::OmitIfDefault);  // unset: equal to the kernel
  v("padding", a.padding, Presence::Optional);
  v("ceil_mode", a.ceil_mode, Presence::Optional);
}
template <typename Visit> void for_each_field(AvgPool2dAttrs& a, Visit&& v) {
  v("kernel", a.kernel, Presence::Required);
  v("stride", a.stride, Presence::OmitIfDefault);  // unset: equal to the kernel
  v("padding", a.padding, Presence::Optional);
  v("ceil_mode", a.ceil_mode, Presence::Optional);
  v("count_include_pad", a.count_include_pad, Presence::Optional);
}
template <typename Visit> void for_each_field(AdaptiveAvgPool2dAttrs& a, Visit&& v) {
  v("output", a.output, Presence::Optional);
}
template <typename Visit> void for_each_field(LinearAttrs& a, Visit&& v) {
  v("out_features", a.out_features, Presence::Required);
  v("bias", a.bias, Presence::Optional);
  v("tied_to", a.tied_to, Presence::OmitIfDefault);
  v("weight_in_out", a.weight_in_out, Presence::OmitIfDefault);
}
template <typename Visit> void for_each_field(FlattenAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(DropoutAttrs& a, Visit&& v) {
  v("p", a.p, Presence::Optional);
}
template <typename Visit> void for_each_field(AddAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(ConcatAttrs& a, Visit&& v) {
  v("axis", a.axis, Presence::Optional);
}
template <typename Visit> void for_each_field(LayerNormAttrs& a, Visit&& v) {
  v("eps", a.eps, Presence::Optional);
  v("rms", a.rms, Presence::OmitIfDefault);
}
template <typename Visit> void for_each_field(EmbeddingAttrs& a, Visit&& v) {
  v("num_embeddings", a.num_embeddings, Presence::Required);
  v("dim", a.dim, Presence::Required);
}
template <typename Visit> void for_each_field(PositionEmbeddingAttrs& a, Visit&& v) {
  v("max_positions", a.max_positions, Presence::Required);
  v("table_2d", a.table_2d, Presence::OmitIfDefault);
  v("row", a.row, Presence::OmitIfDefault);
}
template <typename Visit> void for_each_field(ClassTokenAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(ImageToTokensAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(TakeTokenAttrs& a, Visit&& v) {
  v("index", a.index, Presence::Optional);
}
template <typename Visit> void for_each_field(SelfAttentionAttrs& a, Visit&& v) {
  v("heads", a.heads, Presence::Required);
  v("causal", a.causal, Presence::Optional);
  v("dropout", a.dropout, Presence::Optional);
  v("kv_heads", a.kv_heads, Presence::OmitIfDefault);
  v("head_dim", a.head_dim, Presence::OmitIfDefault);
  v("qkv_bias", a.qkv_bias, Presence::OmitIfDefault);
  v("out_bias", a.out_bias, Presence::OmitIfDefault);
  v("rotary_theta", a.rotary_theta, Presence::OmitIfDefault);
  v("rotary_dims", a.rotary_dims, Presence::OmitIfDefault);
  v("qk_norm", a.qk_norm, Presence::OmitIfDefault);
  v("flash", a.flash, Presence::OmitIfDefault);
  v("q_lora_rank", a.q_lora_rank, Presence::OmitIfDefault);
  v("kv_lora_rank", a.kv_lora_rank, Presence::OmitIfDefault);
  v("rope_head_dim", a.rope_head_dim, Presence::OmitIfDefault);
  v("v_head_dim", a.v_head_dim, Presence::OmitIfDefault);
}
template <typename Visit> void for_each_field(MoeAttrs& a, Visit&& v) {
  v("experts", a.experts, Presence::Required);
  v("top_k", a.top_k, Presence::Required);
  v("expert_ffn", a.expert_ffn, Presence::Required);
  v("shared_ffn", a.shared_ffn, Presence::OmitIfDefault);
  v("shared_gate", a.shared_gate, Presence::OmitIfDefault);
  v("capacity_factor", a.capacity_factor, Presence::OmitIfDefault);
}
template <typename Visit> void for_each_field(SoftmaxCrossEntropyAttrs& a, Visit&& v) {
  v("weight", a.weight, Presence::Optional);
}
template <typename Visit> void for_each_field(HardtanhAttrs& a, Visit&& v) {
  v("min_val", a.min_val, Presence::Optional);
  v("max_val", a.max_val, Presence::Optional);
}
template <typename Visit> void for_each_field(SigmoidAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(SiluAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(HardswishAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(HardsigmoidAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(MulAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(MatmulAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(SoftmaxAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(MulScalarAttrs& a, Visit&& v) { v("factor", a.factor, Presence::Required); }
template <typename Visit> void for_each_field(CausalMaskAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(PowScalarAttrs& a, Visit&& v) { v("exponent", a.exponent, Presence::Required); }
template <typename Visit> void for_each_field(AddScalarAttrs& a, Visit&& v) { v("value", a.value, Presence::Required); }
template <typename Visit> void for_each_field(SqrtAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(ReciprocalAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(RotaryAttrs& a, Visit&& v) { v("theta", a.theta, Presence::Optional); }
template <typename Visit> void for_each_field(Conv3dAttrs& a, Visit&& v) {
  v("out_channels", a.out_channels, Presence::Required);
  v("kernel", a.kernel, Presence::Required);
  v("stride", a.stride, Presence::Optional);
  v("padding", a.padding, Presence::Optional);
  v("dilation", a.dilation, Presence::Optional);
  v("groups", a.groups, Presence::Optional);
  v("bias", a.bias, Presence::Optional);
}
template <typename Visit> void for_each_field(MaxPool3dAttrs& a, Visit&& v) {
  v("kernel", a.kernel, Presence::Required);
  v("stride", a.stride, Presence::OmitIfDefault);
  v("padding", a.padding, Presence::Optional);
  v("ceil_mode", a.ceil_mode, Presence::Optional);
}
template <typename Visit> void for_each_field(AvgPool3dAttrs& a, Visit&& v) {
  v("kernel", a.kernel, Presence::Required);
  v("stride", a.stride, Presence::OmitIfDefault);
  v("padding", a.padding, Presence::Optional);
  v("ceil_mode", a.ceil_mode, Presence::Optional);
  v("count_include_pad", a.count_include_pad, Presence::Optional);
}
template <typename Visit> void for_each_field(LeakyReluAttrs& a, Visit&& v) {
  v("negative_slope", a.negative_slope, Presence::Optional);
}
template <typename Visit> void for_each_field(EluAttrs& a, Visit&& v) { v("alpha", a.alpha, Presence::Optional); }
template <typename Visit> void for_each_field(TanhAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(SoftplusAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(ScaleAttrs& a, Visit&& v) {
  v("shape", a.shape, Presence::Required);
  v("weight_shape", a.weight_shape, Presence::OmitIfDefault);
}
template <typename Visit> void for_each_field(ShiftAttrs& a, Visit&& v) {
  v("shape", a.shape, Presence::Required);
  v("weight_shape", a.weight_shape, Presence::OmitIfDefault);
}
template <typename Visit> void for_each_field(PReluAttrs& a, Visit&& v) {
  v("num_parameters", a.num_parameters, Presence::Optional);
}
template <typename Visit> void for_each_field(ErfAttrs&, Visit&&) {}
template <typename Visit> void for_each_field(ExpandAttrs& a, Visit&& v) { v("shape", a.shape, Presence::Required); }
template <typename Visit> void for_each_field(InstanceNormAttrs& a, Visit&& v) {
  v("eps", a.eps, Presence::Optional);
  v("affine", a.affine, Presence::Optional);
}
template <typename Visit> void for_each_field(UpsampleAttrs& a, Visit&& v) {
  v("scale", a.scale, Presence::Required);
  v("mode", a.mode, Presence::Optional);
  v("align_corners", a.align_corners, Presence::Optional);
}
template <typename Visit> void for_each_field(PadAttrs& a, Visit&& v) {
  v("pads", a.pads, Presence::Required);
  v("mode", a.mode, Presence::Optional);
  v("value", a.value, Presence::Optional);
}
template <typename Visit> void for_each_field(ReshapeAttrs& a, Visit&& v) {
  v("shape", a.shape, Presence::Required);
}
template <typename Visit> void for_each_field(TransposeAttrs& a, Visit&& v) {
  v("perm", a.perm, Presence::Required);
}
template <typename Visit> void for_each_field(SliceAttrs& a, Visit&& v) {
  v("axis", a.axis, Presence::Required);
  v("start", a.start, Presence::Required);
  v("end", a.end, Presence::Required);
}
template <typename Visit> void for_each_field(StochasticDepthAttrs& a, Visit&& v) {
  v("p", a.p, Presence::Optional);
}
template <typename Visit> void for_each_field(MeanAttrs& a, Visit&& v) {
  v("axes", a.axes, Presence::Required);
  v("keepdims", a.keepdims, Presence::Optional);
}

}  // namespace burst::graph
