#pragma once
// The communicator of a world of one rank (a background job's own step program): every
// piece is local and every group holds this rank alone, so sends and receives never come
// and a sum over the group is the tensor itself. Opens nothing. Internal to lib/runtime.
#include <memory>
#include <vector>

#include "burst/runtime/communicator.h"
#include "burst/util/error.h"

namespace burst::runtime::detail {

class SoloCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void prepare_groups(const std::vector<std::vector<int>>& groups) override {
    for (const std::vector<int>& group : groups) BURST_ASSERT(group == std::vector<int>{0}, "a group beyond rank 0");
  }
  std::unique_ptr<PendingWork> send(torch::Tensor&, int, uint32_t) override { return unexpected("send"); }
  std::unique_ptr<PendingWork> receive(torch::Tensor&, int, uint32_t) override { return unexpected("receive"); }
  std::unique_ptr<PendingWork> allreduce_sum(std::vector<torch::Tensor>&, const std::vector<int>& group) override {
    BURST_ASSERT(group == std::vector<int>{0}, "an all-reduce beyond rank 0");
    return std::make_unique<Done>();
  }
  std::unique_ptr<PendingWork> allreduce_sum_world(std::vector<torch::Tensor>&) override {
    return std::make_unique<Done>();
  }
  void barrier() override {}

 private:
  struct Done final : PendingWork {
    void wait() override {}
  };
  static std::unique_ptr<PendingWork> unexpected(const char* what) {
    BURST_ASSERT(false, what);
    return nullptr;
  }
};

}  // namespace burst::runtime::detail
