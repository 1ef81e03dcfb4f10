#include "burst/runtime/communicator.h"

#include <algorithm>
#include <functional>

#include "burst/util/error.h"

namespace burst::runtime {
namespace {

// This rank's position in `group` (ascending ranks).
int64_t member_of(const std::vector<int>& group, int rank) {
  const auto found = std::find(group.begin(), group.end(), rank);
  BURST_ASSERT(found != group.end(), "a collective over a group without this rank");
  return found - group.begin();
}

// An all-reduce in flight whose result is read by `finish` once it is done.
class ThenWork final : public PendingWork {
 public:
  ThenWork(std::unique_ptr<PendingWork> inner, std::function<void()> finish)
      : inner_(std::move(inner)), finish_(std::move(finish)) {}
  void wait() override {
    inner_->wait();
    if (finish_) finish_();
    finish_ = nullptr;
  }

 private:
  std::unique_ptr<PendingWork> inner_;
  std::function<void()> finish_;
};

}  // namespace

std::unique_ptr<PendingWork> Communicator::reduce_scatter_sum(torch::Tensor& shard, torch::Tensor& whole,
                                                              const std::vector<int>& group) {
  BURST_ASSERT(whole.numel() == shard.numel() * static_cast<int64_t>(group.size()),
               "a reduce-scatter's whole holds one shard per member");
  std::vector<torch::Tensor> sum{whole.clone()};
  auto work = allreduce_sum(sum, group);
  const int64_t begin = member_of(group, rank()) * shard.numel();
  torch::Tensor target = shard;  // a handle to the caller's storage
  return std::make_unique<ThenWork>(std::move(work), [sum, target, begin]() mutable {
    target.copy_(sum[0].reshape({-1}).narrow(0, begin, target.numel()).view_as(target));
  });
}

std::unique_ptr<PendingWork> Communicator::all_gather(torch::Tensor& whole, torch::Tensor& shard,
                                                      const std::vector<int>& group) {
  BURST_ASSERT(whole.numel() == shard.numel() * static_cast<int64_t>(group.size()),
               "an all-gather's whole holds one shard per member");
  // Every member's chunk in zeros: the sum is the concatenation, exactly (0 + x == x).
  whole.zero_();
  whole.view({-1}).narrow(0, member_of(group, rank()) * shard.numel(), shard.numel()).copy_(shard.reshape({-1}));
  std::vector<torch::Tensor> sum{whole};
  return allreduce_sum(sum, group);
}

}  // namespace burst::runtime
