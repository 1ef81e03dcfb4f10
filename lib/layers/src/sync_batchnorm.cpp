#include "burst/layers/sync_batchnorm.h"

#include <torch/autograd.h>

#include "burst/util/error.h"

namespace burst::layers {
namespace {

// Per-channel [C] values as [1, C, 1, 1] (or [1, C, 1, 1, 1]), to broadcast over [b, C, ...] of `rank` dims.
torch::Tensor per_channel(const torch::Tensor& values, int64_t rank) {
  std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
  shape[1] = -1;
  return values.view(shape);
}

class SyncBatchNorm : public torch::autograd::Function<SyncBatchNorm> {
 public:
  // Returns y = (x - mean) * inverse_std * weight + bias, the group's mean and variance given.
  // One fused pass: libtorch's inference-mode batch_norm with them as the statistics.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x, torch::Tensor weight,
                               torch::Tensor bias, torch::Tensor mean, torch::Tensor variance, double eps,
                               int64_t context_address) {
    ctx->save_for_backward({x, weight, mean, variance});
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["context"] = context_address;
    return torch::batch_norm(x, weight, bias, mean, variance, /*training=*/false, /*momentum=*/0.0, eps,
                             /*cudnn_enabled=*/false);
  }

  // With x_hat = (x - mean) * inverse_std and the group's means of dy and dy * x_hat:
  // dx = weight * inverse_std * (dy - mean(dy) - x_hat * mean(dy * x_hat)).
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list outputs) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& weight = saved[1];
    const torch::Tensor& mean = saved[2];
    const torch::Tensor& variance = saved[3];
    const double eps = ctx->saved_data["eps"].toDouble();
    const auto* context = reinterpret_cast<const SyncBatchNormContext*>(ctx->saved_data["context"].toInt());
    const torch::Tensor dy = outputs[0].contiguous();
    // This rank's sums of dy * x_hat and of dy, per channel, in one fused pass: inference-mode
    // batch_norm's backward gives exactly these as its weight and bias gradients.
    const auto local = torch::native_batch_norm_backward(dy, x, weight, mean, variance, {}, {}, /*train=*/false, eps,
                                                         {false, true, true});
    const torch::Tensor& local_dy_x_hat = std::get<1>(local);
    const torch::Tensor& local_dy = std::get<2>(local);
    torch::Tensor sums = torch::cat({local_dy, local_dy_x_hat});
    context->sum_over_group(sums);
    const int64_t channels = weight.size(0);
    const torch::Tensor mean_dy = sums.narrow(0, 0, channels) / context->count;
    const torch::Tensor mean_dy_x_hat = sums.narrow(0, channels, channels) / context->count;
    const torch::Tensor inverse_std = (variance + eps).rsqrt();
    // (x - mean) * (-inverse_std * mean(dy * x_hat)) = -x_hat * mean(dy * x_hat); then + dy,
    // - mean(dy), * weight * inverse_std: one new tensor, four passes in place.
    const int64_t rank = x.dim();
    torch::Tensor dx = x - per_channel(mean, rank);
    dx.mul_(per_channel(-inverse_std * mean_dy_x_hat, rank))
        .add_(dy)
        .sub_(per_channel(mean_dy, rank))
        .mul_(per_channel(weight * inverse_std, rank));
    // x, weight, bias, mean, variance, eps, context_address.
    return {dx, local_dy_x_hat, local_dy, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// The module's tensor `name` (a handle sharing its storage: in-place updates reach the
// module). named_parameters() and named_buffers() return temporaries, so copy the handle.
torch::Tensor named(torch::nn::Module& module, const char* name, bool buffer) {
  const auto all = buffer ? module.named_buffers() : module.named_parameters();
  const torch::Tensor* found = all.find(name);
  BURST_ASSERT(found != nullptr, std::string("BatchNorm2d without ") + name);
  return *found;
}

}  // namespace

torch::Tensor sync_batchnorm_forward(const torch::Tensor& x, torch::nn::Module& module, double eps,
                                     double momentum, SyncBatchNormContext& context) {
  BURST_ASSERT(x.dim() == 4 || x.dim() == 5, "sync BatchNorm takes [b, C, H, W] or [b, C, D, H, W]");
  // The group holds the whole global batch: count = B x H x W (x D) per channel, no message
  // needed. One all-reduce of the per-channel sums of x and x^2, accumulated in float64 so
  // that E[x^2] - E[x]^2 loses nothing that one device's float64-accumulated statistics
  // keep (x^2 itself is rounded to float32: a relative 6e-8 per element).
  int64_t per_sample = 1;  // H x W (x D)
  for (int64_t d = 2; d < x.dim(); ++d) per_sample *= x.size(d);
  const double total = static_cast<double>(context.batch * per_sample);
  torch::Tensor mean;
  torch::Tensor variance;
  {
    torch::NoGradGuard no_grad;
    std::vector<int64_t> dims{0};
    for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
    torch::Tensor sums = torch::cat({x.sum(dims, /*keepdim=*/false, torch::kFloat64),
                                     (x * x).sum(dims, /*keepdim=*/false, torch::kFloat64)});
    context.sum_over_group(sums);
    const int64_t channels = x.size(1);
    const torch::Tensor mean_wide = sums.narrow(0, 0, channels) / total;
    const torch::Tensor variance_wide = (sums.narrow(0, channels, channels) / total - mean_wide.pow(2)).clamp_min(0);
    mean = mean_wide.to(x.scalar_type());
    variance = variance_wide.to(x.scalar_type());
    torch::Tensor running_mean = named(module, "running_mean", true);
    torch::Tensor running_var = named(module, "running_var", true);
    running_mean.mul_(1 - momentum).add_(mean * momentum);
    running_var.mul_(1 - momentum).add_(variance * (total / std::max(total - 1, 1.0)) * momentum);
    named(module, "num_batches_tracked", true).add_(1);
  }
  context.count = total;
  static_assert(sizeof(int64_t) >= sizeof(void*), "pointers fit in int64");
  return SyncBatchNorm::apply(x, named(module, "weight", false), named(module, "bias", false), mean, variance, eps,
                              reinterpret_cast<int64_t>(&context));
}

}  // namespace burst::layers
