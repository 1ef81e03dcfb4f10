#include "gradient_buckets.h"

#include <algorithm>

#include "burst/util/error.h"

namespace burst::runtime::detail {

GradientBuckets::GradientBuckets(const program::StepProgram& program, int rank,
                                 const std::function<std::vector<torch::Tensor>(graph::LayerId)>& parameters,
                                 const std::function<int(graph::LayerId)>& contributions,
                                 Communicator& communicator, int zero_stage)
    : communicator_(communicator), zero_stage_(zero_stage), local_index_(program.buckets.size(), -1) {
  BURST_ASSERT(zero_stage >= 0 && zero_stage <= 2, "the runtime shards buckets under ZeRO stages 1 and 2");
  for (size_t b = 0; b < program.buckets.size(); ++b) {
    const program::Bucket& planned = program.buckets[b];
    const std::vector<int>& group = program.groups[static_cast<size_t>(planned.group)];
    if (!std::binary_search(group.begin(), group.end(), rank)) continue;
    auto bucket = std::make_unique<Bucket>();
    bucket->group = group;
    int64_t size = 0;
    for (const graph::LayerId layer : planned.layers) {
      for (const torch::Tensor& p : parameters(layer)) {
        bucket->parameters.push_back(p);
        bucket->expected.push_back(contributions(layer));
        bucket->offsets.push_back(size);
        size += p.numel();
      }
    }
    BURST_ASSERT(size == planned.params, "a bucket's parameters must be its layers'");
    bucket->size = size;
    const auto members = static_cast<int64_t>(group.size());
    bucket->padded = sharded() ? (size + members - 1) / members * members : size;
    // The parameters' own dtype (float32, or float64 under --dtype float64); the program
    // counts the bytes at the step's precision.
    bucket->flat = torch::zeros({bucket->padded}, bucket->parameters.front().options().requires_grad(false));
    bucket->arrived.assign(bucket->parameters.size(), 0);
    if (sharded()) {
      make_shard(*bucket, rank);
      for (const torch::Tensor& p : bucket->parameters) sharded_parameters_.insert(p.unsafeGetTensorImpl());
    }
    local_index_[b] = static_cast<int32_t>(buckets_.size());
    const size_t index = buckets_.size();
    for (size_t slot = 0; slot < bucket->parameters.size(); ++slot) {
      bucket->parameters[slot].register_hook(
          [this, index, slot](const torch::Tensor& gradient) { gradient_arrived(index, slot, gradient); });
    }
    buckets_.push_back(std::move(bucket));
  }
}

GradientBuckets::~GradientBuckets() = default;

void GradientBuckets::begin_step() {
  for (auto& bucket : buckets_) {
    if (!bucket->flat.defined()) {
      // ZeRO 2 dropped it at the last step's end; gradients overwrite all but the padding.
      bucket->flat = torch::empty({bucket->padded}, bucket->shard.options().requires_grad(false));
      bucket->flat.narrow(0, bucket->size, bucket->padded - bucket->size).zero_();
    }
    std::fill(bucket->arrived.begin(), bucket->arrived.end(), 0);
    bucket->missing = bucket->parameters.size();
    bucket->work.reset();
  }
  next_to_start_ = 0;
}

void GradientBuckets::gradient_arrived(size_t index, size_t slot, const torch::Tensor& gradient) {
  Bucket& bucket = *buckets_[index];
  BURST_ASSERT(bucket.arrived[slot] < bucket.expected[slot] && !bucket.work,
               "a parameter's gradient arrived more often than its contributions in one step");
  const torch::Tensor& p = bucket.parameters[slot];
  torch::Tensor slice = bucket.flat.narrow(0, bucket.offsets[slot], p.numel());
  if (bucket.arrived[slot] == 0) {
    slice.copy_(gradient.reshape({-1}));
  } else {
    slice.add_(gradient.reshape({-1}));  // a tied weight's second use, in another segment
  }
  if (++bucket.arrived[slot] < bucket.expected[slot]) return;
  --bucket.missing;
  if (bucket.missing == 0) start_ready_in_order();
}

void GradientBuckets::start_ready_in_order() {
  while (next_to_start_ < buckets_.size() && buckets_[next_to_start_]->missing == 0) {
    launch(*buckets_[next_to_start_]);
    ++next_to_start_;
  }
}

void GradientBuckets::launch(Bucket& bucket) {
  if (sharded()) {
    bucket.work = communicator_.reduce_scatter_sum(bucket.shard_gradient, bucket.flat, bucket.group);
    return;
  }
  std::vector<torch::Tensor> buffers{bucket.flat};
  bucket.work = communicator_.allreduce_sum(buffers, bucket.group);
}

void GradientBuckets::start(int32_t program_bucket) {
  const int32_t index = local_index_.at(static_cast<size_t>(program_bucket));
  BURST_ASSERT(index >= 0, "ALLREDUCE of a bucket this rank is not in");
  for (auto i = static_cast<int32_t>(next_to_start_); i <= index; ++i) {
    Bucket& bucket = *buckets_[static_cast<size_t>(i)];
    for (size_t slot = 0; slot < bucket.parameters.size(); ++slot) {
      if (bucket.arrived[slot] >= bucket.expected[slot]) continue;
      // Contributions no backward reached this step count as zero.
      if (bucket.arrived[slot] == 0) bucket.flat.narrow(0, bucket.offsets[slot], bucket.parameters[slot].numel()).zero_();
      bucket.arrived[slot] = bucket.expected[slot];
    }
    bucket.missing = 0;
  }
  start_ready_in_order();
}

void GradientBuckets::finish(int32_t program_bucket, const std::function<void(PendingWork&)>& on_wait) {
  Bucket& bucket = *buckets_.at(static_cast<size_t>(local_index_.at(static_cast<size_t>(program_bucket))));
  BURST_ASSERT(bucket.work != nullptr, "WAIT_ALLREDUCE before its ALLREDUCE");
  on_wait(*bucket.work);
  if (sharded()) {
    bucket.shard.mutable_grad() = bucket.shard_gradient;
    return;
  }
  for (size_t slot = 0; slot < bucket.parameters.size(); ++slot) {
    torch::Tensor& p = bucket.parameters[slot];
    p.mutable_grad() = bucket.flat.narrow(0, bucket.offsets[slot], p.numel()).view_as(p);
  }
}

int64_t GradientBuckets::bytes(int32_t program_bucket) const {
  const Bucket& bucket = *buckets_.at(static_cast<size_t>(local_index_.at(static_cast<size_t>(program_bucket))));
  return bucket.padded * static_cast<int64_t>(bucket.parameters.front().element_size());
}

}  // namespace burst::runtime::detail
