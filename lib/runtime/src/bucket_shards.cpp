// GradientBuckets under ZeRO stages 1 and 2 (gradient_buckets.h): the shards the optimizer
// updates, their all-gather, and the optimizer state a checkpoint holds unsharded.
#include <algorithm>
#include <unordered_set>

#include "burst/util/error.h"
#include "gradient_buckets.h"
#include "training_state.h"

namespace burst::runtime::detail {

torch::Tensor GradientBuckets::flatten(const Bucket& bucket, const std::function<torch::Tensor(size_t)>& of) {
  torch::NoGradGuard no_grad;
  torch::Tensor flat = torch::zeros({bucket.padded}, bucket.parameters.front().options().requires_grad(false));
  for (size_t slot = 0; slot < bucket.parameters.size(); ++slot) {
    const torch::Tensor value = of(slot);
    flat.narrow(0, bucket.offsets[slot], value.numel()).copy_(value.reshape({-1}));
  }
  return flat;
}

void GradientBuckets::make_shard(Bucket& bucket, int rank) const {
  bucket.member = static_cast<int>(std::find(bucket.group.begin(), bucket.group.end(), rank) - bucket.group.begin());
  const int64_t length = bucket.padded / static_cast<int64_t>(bucket.group.size());
  const torch::Tensor weights = flatten(bucket, [&](size_t slot) { return bucket.parameters[slot].detach(); });
  bucket.shard = weights.narrow(0, bucket.member * length, length).clone().requires_grad_(true);
  bucket.shard_gradient = torch::zeros_like(bucket.shard, bucket.shard.options().requires_grad(false));
}

std::vector<torch::Tensor> GradientBuckets::optimizer_parameters(const std::vector<torch::Tensor>& parameters) const {
  if (!sharded()) return parameters;
  std::unordered_set<void*> in_shards;
  for (const auto& bucket : buckets_) {
    for (const torch::Tensor& p : bucket->parameters) in_shards.insert(optimizer_state_key(p));
  }
  std::vector<torch::Tensor> kept;
  for (const torch::Tensor& p : parameters) {
    if (in_shards.count(optimizer_state_key(p)) == 0) kept.push_back(p);
  }
  for (const auto& bucket : buckets_) kept.push_back(bucket->shard);
  return kept;
}

bool GradientBuckets::shards(const torch::Tensor& parameter) const {
  return sharded_parameters_.count(parameter.unsafeGetTensorImpl()) != 0;
}

void GradientBuckets::for_each_shard_slice(
    const std::function<void(const torch::Tensor&, const torch::Tensor&)>& visit) const {
  if (!sharded()) return;
  for (const auto& bucket : buckets_) {
    // The shard holds elements [begin, begin + length) of the bucket's flat gradients.
    const int64_t length = bucket->padded / static_cast<int64_t>(bucket->group.size());
    const int64_t begin = bucket->member * length;
    for (size_t slot = 0; slot < bucket->parameters.size(); ++slot) {
      const int64_t first = std::max(begin, bucket->offsets[slot]);
      const int64_t end = std::min(begin + length, bucket->offsets[slot] + bucket->parameters[slot].numel());
      if (first < end) visit(bucket->parameters[slot], bucket->shard_gradient.narrow(0, first - begin, end - first));
    }
  }
}

void GradientBuckets::gather(int32_t program_bucket, const std::function<void(PendingWork&)>& on_wait) {
  Bucket& bucket = *buckets_.at(static_cast<size_t>(local_index_.at(static_cast<size_t>(program_bucket))));
  BURST_ASSERT(sharded(), "ALL_GATHER of a bucket without ZeRO");
  torch::Tensor shard = bucket.shard.detach();
  on_wait(*communicator_.all_gather(bucket.flat, shard, bucket.group));
  torch::NoGradGuard no_grad;
  for (size_t slot = 0; slot < bucket.parameters.size(); ++slot) {
    torch::Tensor& p = bucket.parameters[slot];
    p.copy_(bucket.flat.narrow(0, bucket.offsets[slot], p.numel()).view_as(p));
  }
  if (zero_stage_ == 2) bucket.flat = torch::Tensor();  // stage 2 keeps no whole gradients between steps
}

void GradientBuckets::gather_parameter_state(torch::optim::Optimizer& optimizer) {
  for (const auto& bucket : buckets_) {
    // Every member has stepped as often as the others: all hold a state, or none does.
    const auto found = optimizer.state().find(optimizer_state_key(bucket->shard));
    if (found == optimizer.state().end()) continue;
    // The shard's state object itself: inserting the parameters' moves the map's entries.
    torch::optim::OptimizerParamState& shard_state = *found->second;
    std::vector<torch::Tensor> wholes;
    for (const torch::Tensor& shard : optimizer_state_tensors(shard_state)) {
      if (!shard.defined()) {
        wholes.emplace_back();
        continue;
      }
      torch::Tensor mine = shard.contiguous();
      torch::Tensor whole = torch::empty({bucket->padded}, shard.options());
      communicator_.all_gather(whole, mine, bucket->group)->wait();
      wholes.push_back(whole);
    }
    for (size_t slot = 0; slot < bucket->parameters.size(); ++slot) {
      const torch::Tensor& p = bucket->parameters[slot];
      std::vector<torch::Tensor> tensors;
      for (const torch::Tensor& whole : wholes) {
        tensors.push_back(whole.defined() ? whole.narrow(0, bucket->offsets[slot], p.numel()).view_as(p).clone()
                                          : torch::Tensor());
      }
      optimizer.state()[optimizer_state_key(p)] = optimizer_state_like(shard_state, tensors);
    }
  }
}

void GradientBuckets::drop_parameter_state(torch::optim::Optimizer& optimizer) {
  for (const auto& bucket : buckets_) {
    for (const torch::Tensor& p : bucket->parameters) optimizer.state().erase(optimizer_state_key(p));
  }
}

void GradientBuckets::shard_loaded_state(torch::optim::Optimizer* optimizer) {
  for (const auto& bucket : buckets_) {
    const int64_t length = bucket->padded / static_cast<int64_t>(bucket->group.size());
    const torch::Tensor weights = flatten(*bucket, [&](size_t slot) { return bucket->parameters[slot].detach(); });
    {
      torch::NoGradGuard no_grad;
      bucket->shard.copy_(weights.narrow(0, bucket->member * length, length));
    }
    if (optimizer == nullptr) continue;
    optimizer->state().erase(optimizer_state_key(bucket->shard));
    // The loaded state of the bucket's first parameter says which slots there are; a
    // parameter loaded without state (a checkpoint written before its first step) counts as
    // zeros, as its state would be.
    const auto first = optimizer->state().find(optimizer_state_key(bucket->parameters.front()));
    if (first == optimizer->state().end()) continue;
    torch::optim::OptimizerParamState& first_state = *first->second;
    std::vector<torch::Tensor> shards;
    const std::vector<torch::Tensor> first_slots = optimizer_state_tensors(first_state);
    for (size_t k = 0; k < first_slots.size(); ++k) {
      if (!first_slots[k].defined()) {
        shards.emplace_back();
        continue;
      }
      const torch::Tensor whole = flatten(*bucket, [&](size_t slot) {
        const auto found = optimizer->state().find(optimizer_state_key(bucket->parameters[slot]));
        const torch::Tensor& p = bucket->parameters[slot];
        if (found == optimizer->state().end()) return torch::zeros_like(p);
        const torch::Tensor value = optimizer_state_tensors(*found->second)[k];
        return value.defined() ? value : torch::zeros_like(p);
      });
      shards.push_back(whole.narrow(0, bucket->member * length, length).clone());
    }
    optimizer->state()[optimizer_state_key(bucket->shard)] = optimizer_state_like(first_state, shards);
    for (const torch::Tensor& p : bucket->parameters) optimizer->state().erase(optimizer_state_key(p));
  }
}

}  // namespace burst::runtime::detail
