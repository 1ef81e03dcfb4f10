#pragma once
// The runtime's view of communication: point-to-point messages between ranks and
// all-reduces within groups of ranks. C10dCommunicator (c10d ProcessGroupGloo over a
// TCPStore rendezvous) serves CPU runs; an NCCL implementation can stand beside it on CUDA
// builds. Includes libtorch.
//
// Ordering contract (c10d's): messages between two ranks match by tag and issue order;
// every member of a group issues that group's all-reduces in the same order. The executor
// derives all of them from the plan in graph order, identically on every rank.
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

namespace burst::runtime {

// An operation in flight. wait() blocks until it is done and throws on failure.
class PendingWork {
 public:
  virtual ~PendingWork() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Creates the groups (ascending ranks, at least two) the run will all-reduce in. Every
  // rank calls it with the same list in the same order; a rank joins the groups it is in.
  virtual void prepare_groups(const std::vector<std::vector<int>>& groups) = 0;

  // Sends or receives a contiguous tensor; `tag` tells apart messages between the same two
  // ranks. The tensor must stay alive until the work is done.
  virtual std::unique_ptr<PendingWork> send(torch::Tensor& tensor, int destination, uint32_t tag) = 0;
  virtual std::unique_ptr<PendingWork> receive(torch::Tensor& tensor, int source, uint32_t tag) = 0;

  // Sums `tensors` element-wise over the ranks of `group` (prepared), in place.
  virtual std::unique_ptr<PendingWork> allreduce_sum(std::vector<torch::Tensor>& tensors,
                                                     const std::vector<int>& group) = 0;

  // Sums over all ranks, in place.
  virtual std::unique_ptr<PendingWork> allreduce_sum_world(std::vector<torch::Tensor>& tensors) = 0;

  // ZeRO's collectives over `group` (prepared; this rank is member m of its n ranks).
  // `whole` holds n equal contiguous chunks of `shard`'s size. reduce_scatter_sum: `shard`
  // becomes chunk m of the element-wise sum of every member's `whole`. all_gather: chunk k
  // of `whole` becomes member k's `shard`. Both tensors must stay alive until the work is
  // done. The defaults run them as one all-reduce (twice the bytes a reduce-scatter or
  // all-gather moves, with the same result); C10dCommunicator runs c10d's own.
  virtual std::unique_ptr<PendingWork> reduce_scatter_sum(torch::Tensor& shard, torch::Tensor& whole,
                                                          const std::vector<int>& group);
  virtual std::unique_ptr<PendingWork> all_gather(torch::Tensor& whole, torch::Tensor& shard,
                                                  const std::vector<int>& group);

  virtual void barrier() = 0;
};

}  // namespace burst::runtime
