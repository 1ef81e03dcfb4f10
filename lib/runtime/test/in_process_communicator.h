#pragma once
// Ranks as threads of one process, for the runtime's unit tests: a Communicator whose
// messages and all-reduces go through memory shared by the ranks of one InProcessWorld (as
// c10d's own tests run ranks as threads over a HashStore). Deterministic: an all-reduce
// sums in ascending rank order, whatever order the ranks arrive in. Every operation a rank
// issues is logged, in issue order, so tests can check what the executor did and when.
//
// A wait that is not answered within the world's timeout throws std::runtime_error naming
// the peer, as Gloo's timeouts do.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "burst/runtime/communicator.h"

namespace burst::runtime::testing {

// One issued operation: "send 3 tag 12", "recv 1 tag 12", "allreduce 0,1", "allreduce world".
using IssueLog = std::vector<std::string>;

class InProcessWorld {
 public:
  InProcessWorld(int size, std::chrono::milliseconds timeout) : size_(size), timeout_(timeout) {}
  int size() const { return size_; }

  // The communicator of `rank`; it stays owned by the world.
  Communicator& rank(int rank);
  const IssueLog& issued(int rank) const { return logs_.at(static_cast<size_t>(rank)); }

 private:
  friend class InProcessCommunicator;
  using MailboxKey = std::tuple<int, int, uint32_t>;  // source, destination, tag
  // One all-reduce of one group: each member's contribution, by position in the group.
  struct Reduction {
    std::vector<std::vector<torch::Tensor>> contributions;
    int deposited = 0;
    int collected = 0;
    std::vector<torch::Tensor> sum;
  };
  using ReductionKey = std::pair<std::vector<int>, int64_t>;  // group, sequence number

  void post(const MailboxKey& key, torch::Tensor message);
  torch::Tensor take(const MailboxKey& key);
  int64_t deposit(const std::vector<int>& group, int member, std::vector<torch::Tensor> tensors);
  std::vector<torch::Tensor> collect(const std::vector<int>& group, int64_t sequence);
  std::string peer_text(const std::vector<int>& group) const;

  int size_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<MailboxKey, std::deque<torch::Tensor>> mailboxes_;
  std::map<ReductionKey, Reduction> reductions_;
  // Per (group, member): how many all-reduces that member has issued in that group.
  std::map<std::pair<std::vector<int>, int>, int64_t> issued_reductions_;
  std::vector<IssueLog> logs_ = std::vector<IssueLog>(static_cast<size_t>(size_));
  std::vector<std::unique_ptr<Communicator>> ranks_;
};

}  // namespace burst::runtime::testing
