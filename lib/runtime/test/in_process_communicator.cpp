#include "in_process_communicator.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace burst::runtime::testing {
namespace {

class DoneWork final : public PendingWork {
 public:
  void wait() override {}
};

template <typename Wait>
class DeferredWork final : public PendingWork {
 public:
  explicit DeferredWork(Wait wait) : wait_(std::move(wait)) {}
  void wait() override {
    if (done_) return;
    wait_();
    done_ = true;
  }

 private:
  Wait wait_;
  bool done_ = false;
};

template <typename Wait>
std::unique_ptr<PendingWork> deferred(Wait wait) {
  return std::make_unique<DeferredWork<Wait>>(std::move(wait));
}

}  // namespace

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(InProcessWorld& world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_.size(); }
  void prepare_groups(const std::vector<std::vector<int>>&) override {}

  std::unique_ptr<PendingWork> send(torch::Tensor& tensor, int destination, uint32_t tag) override {
    log(fmt::format("send {} tag {}", destination, tag));
    world_.post({rank_, destination, tag}, tensor.clone());
    return std::make_unique<DoneWork>();
  }
  std::unique_ptr<PendingWork> receive(torch::Tensor& tensor, int source, uint32_t tag) override {
    log(fmt::format("recv {} tag {}", source, tag));
    torch::Tensor target = tensor;  // a handle: the executor keeps the storage alive until wait
    return deferred([this, target, source, tag]() mutable { target.copy_(world_.take({source, rank_, tag})); });
  }
  std::unique_ptr<PendingWork> allreduce_sum(std::vector<torch::Tensor>& tensors,
                                             const std::vector<int>& group) override {
    log(fmt::format("allreduce {}", fmt::join(group, ",")));
    return reduce(tensors, group);
  }
  std::unique_ptr<PendingWork> allreduce_sum_world(std::vector<torch::Tensor>& tensors) override {
    log("allreduce world");
    return reduce(tensors, world_group());
  }
  void barrier() override {
    std::vector<torch::Tensor> none;
    reduce(none, world_group())->wait();
  }

 private:
  void log(std::string entry) {
    std::lock_guard<std::mutex> lock(world_.mutex_);
    world_.logs_[static_cast<size_t>(rank_)].push_back(std::move(entry));
  }
  std::vector<int> world_group() const {
    std::vector<int> all(static_cast<size_t>(world_.size()));
    for (int r = 0; r < world_.size(); ++r) all[static_cast<size_t>(r)] = r;
    return all;
  }
  // The contribution is taken at issue (as Gloo reads the tensors once it runs), the sum
  // written back at wait.
  std::unique_ptr<PendingWork> reduce(std::vector<torch::Tensor>& tensors, const std::vector<int>& group) {
    const int member = static_cast<int>(std::find(group.begin(), group.end(), rank_) - group.begin());
    std::vector<torch::Tensor> copies;
    for (const torch::Tensor& t : tensors) copies.push_back(t.clone());
    const int64_t sequence = world_.deposit(group, member, std::move(copies));
    std::vector<torch::Tensor> targets = tensors;  // handles to the same storage
    return deferred([this, targets, group, sequence]() mutable {
      const std::vector<torch::Tensor> sum = world_.collect(group, sequence);
      for (size_t i = 0; i < targets.size(); ++i) targets[i].copy_(sum[i]);
    });
  }

  InProcessWorld& world_;
  int rank_;
};

Communicator& InProcessWorld::rank(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (ranks_.empty()) {
    for (int r = 0; r < size_; ++r) ranks_.push_back(std::make_unique<InProcessCommunicator>(*this, r));
  }
  return *ranks_.at(static_cast<size_t>(rank));
}

void InProcessWorld::post(const MailboxKey& key, torch::Tensor message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mailboxes_[key].push_back(std::move(message));
  }
  changed_.notify_all();
}

torch::Tensor InProcessWorld::take(const MailboxKey& key) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto& box = mailboxes_[key];
  if (!changed_.wait_for(lock, timeout_, [&] { return !box.empty(); })) {
    throw std::runtime_error(fmt::format("Timed out waiting {}ms for recv operation from rank {} (tag {})",
                                         timeout_.count(), std::get<0>(key), std::get<2>(key)));
  }
  torch::Tensor message = std::move(box.front());
  box.pop_front();
  return message;
}

int64_t InProcessWorld::deposit(const std::vector<int>& group, int member, std::vector<torch::Tensor> tensors) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t sequence = issued_reductions_[{group, member}]++;
  Reduction& reduction = reductions_[{group, sequence}];
  reduction.contributions.resize(group.size());
  reduction.contributions[static_cast<size_t>(member)] = std::move(tensors);
  if (++reduction.deposited == static_cast<int>(group.size())) {
    // Sum in member (ascending rank) order: the same result whoever arrived last.
    reduction.sum = reduction.contributions[0];
    for (size_t m = 1; m < group.size(); ++m) {
      for (size_t i = 0; i < reduction.sum.size(); ++i) reduction.sum[i] = reduction.sum[i] + reduction.contributions[m][i];
    }
    changed_.notify_all();
  }
  return sequence;
}

std::vector<torch::Tensor> InProcessWorld::collect(const std::vector<int>& group, int64_t sequence) {
  std::unique_lock<std::mutex> lock(mutex_);
  const ReductionKey key{group, sequence};
  if (!changed_.wait_for(lock, timeout_, [&] { return reductions_[key].deposited == static_cast<int>(group.size()); })) {
    throw std::runtime_error(fmt::format("Timed out waiting {}ms for all-reduce over ranks {}", timeout_.count(),
                                         peer_text(group)));
  }
  Reduction& reduction = reductions_[key];
  std::vector<torch::Tensor> sum = reduction.sum;
  if (++reduction.collected == static_cast<int>(group.size())) reductions_.erase(key);
  return sum;
}

std::string InProcessWorld::peer_text(const std::vector<int>& group) const { return fmt::format("{}", fmt::join(group, ",")); }

}  // namespace burst::runtime::testing
