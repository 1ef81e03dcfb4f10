#include "sync_batchnorm.h"

#include <torch/autograd.h>

#include "burst/util/error.h"

namespace burst::runtime {
namespace {

// Sums `tensor` over the group, in place, and waits.
void group_sum(torch::Tensor& tensor, Communicator& communicator, const std::vector<int>& group) {
  std::vector<torch::Tensor> buffers{tensor};
  communicator.allreduce_sum(buffers, group)->wait();
}

class SyncBatchNorm : public torch::autograd::Function<SyncBatchNorm> {
 public:
  // Returns y = x_hat * weight + bias with x_hat normalised by the group's statistics.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x, torch::Tensor weight,
                               torch::Tensor bias, torch::Tensor mean, torch::Tensor inverse_std,
                               int64_t context_address) {
    const torch::Tensor x_hat = (x - mean.view({1, -1, 1, 1})) * inverse_std.view({1, -1, 1, 1});
    ctx->save_for_backward({x_hat, weight, inverse_std});
    ctx->saved_data["context"] = context_address;
    return x_hat * weight.view({1, -1, 1, 1}) + bias.view({1, -1, 1, 1});
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list outputs) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x_hat = saved[0];
    const torch::Tensor& weight = saved[1];
    const torch::Tensor& inverse_std = saved[2];
    const auto* context = reinterpret_cast<const SyncBatchNormContext*>(ctx->saved_data["context"].toInt());
    const torch::Tensor& dy = outputs[0];
    const torch::Tensor local_dy = dy.sum({0, 2, 3});
    const torch::Tensor local_dy_x_hat = (dy * x_hat).sum({0, 2, 3});
    torch::Tensor sums = torch::cat({local_dy, local_dy_x_hat});
    group_sum(sums, *context->communicator, context->group);
    const int64_t channels = weight.size(0);
    const torch::Tensor mean_dy = sums.narrow(0, 0, channels) / context->count;
    const torch::Tensor mean_dy_x_hat = sums.narrow(0, channels, channels) / context->count;
    const torch::Tensor dx = (weight * inverse_std).view({1, -1, 1, 1}) *
                             (dy - mean_dy.view({1, -1, 1, 1}) - x_hat * mean_dy_x_hat.view({1, -1, 1, 1}));
    // x, weight, bias, mean, inverse_std, context_address.
    return {dx, local_dy_x_hat, local_dy, torch::Tensor(), torch::Tensor(), torch::Tensor()};
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
  BURST_ASSERT(x.dim() == 4, "sync BatchNorm2d takes [b, C, H, W]");
  Communicator& communicator = *context.communicator;
  const std::vector<int>& group = context.group;
  // The group holds the whole global batch: count = B x H x W per channel, no message
  // needed. One all-reduce of the per-channel sums of x and x^2, in float64 so that
  // E[x^2] - E[x]^2 loses nothing that one device's two-pass float32 statistics keep.
  const double total = static_cast<double>(context.batch * x.size(2) * x.size(3));
  torch::Tensor mean;
  torch::Tensor variance;
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor wide = x.to(torch::kFloat64);
    torch::Tensor sums = torch::cat({wide.sum({0, 2, 3}), wide.pow(2).sum({0, 2, 3})});
    group_sum(sums, communicator, group);
    const int64_t channels = x.size(1);
    const torch::Tensor mean_wide = sums.narrow(0, 0, channels) / total;
    const torch::Tensor variance_wide = (sums.narrow(0, channels, channels) / total - mean_wide.pow(2)).clamp_min(0);
    mean = mean_wide.to(torch::kFloat32);
    variance = variance_wide.to(torch::kFloat32);
    torch::Tensor running_mean = named(module, "running_mean", true);
    torch::Tensor running_var = named(module, "running_var", true);
    running_mean.mul_(1 - momentum).add_(mean * momentum);
    running_var.mul_(1 - momentum).add_(variance * static_cast<float>(total / std::max(total - 1, 1.0)) * momentum);
    named(module, "num_batches_tracked", true).add_(1);
  }
  const torch::Tensor inverse_std = (variance + eps).rsqrt();
  context.count = total;
  static_assert(sizeof(int64_t) >= sizeof(void*), "pointers fit in int64");
  return SyncBatchNorm::apply(x, named(module, "weight", false), named(module, "bias", false), mean, inverse_std,
                              reinterpret_cast<int64_t>(&context));
}

}  // namespace burst::runtime
