#pragma once
// The step program's gradient buckets on one rank, as DDP forms them: each bucket is one
// flat fp32 buffer of its layers' gradients. A hook on every parameter copies its gradient
// into the buffer as autograd computes it; once a bucket has all of its gradients, its
// all-reduce starts asynchronously while the rest of backward runs. Buckets start strictly
// in the program's order (the order every rank of a group issues them: c10d's rule), so a
// bucket that fills early waits for the ones before it.
//
// ZeRO stages 1 and 2 (docs/runtime.md, "ZeRO"): the bucket's buffer is padded to a
// multiple of its group's n ranks and cut into n equal shards. Member m's optimizer updates
// shard m of the bucket's flat weights (a leaf tensor of its own, `shard_parameters()`),
// whose gradient is shard m of the bucket's sum (REDUCE_SCATTER); ALL_GATHER then brings
// every member's updated shard back into the layers' parameters. The optimizer's state of a
// bucket's parameters is thus held once in the group, cut the same way. Every optimizer
// burst has (SGD with momentum and weight decay, Adam) updates element by element, so a
// shard's update is the same arithmetic as the whole parameters' on one process. Stage 2
// also drops the bucket's whole gradient buffer between steps. Includes libtorch.
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_set>
#include <vector>

#include <torch/optim.h>
#include <torch/types.h>

#include "burst/program/step_program.h"
#include "burst/runtime/communicator.h"

namespace burst::runtime::detail {

class GradientBuckets {
 public:
  // `parameters(layer)`: the layer's parameters on this rank (the layers of this rank's
  // buckets must be ours). `contributions(layer)`: how many autograd calls of a step add to
  // those parameters' gradients on this rank: 1, or more for an embedding whose weight a
  // tied head in another segment also uses (each segment's backward is its own call, and
  // the hook fires once per call). Registers the hooks; they stay for the parameters' lifetime.
  // `zero_stage`: 0, or 1 and 2 (sharded as above); the program's.
  GradientBuckets(const program::StepProgram& program, int rank,
                  const std::function<std::vector<torch::Tensor>(graph::LayerId)>& parameters,
                  const std::function<int(graph::LayerId)>& contributions, Communicator& communicator,
                  int zero_stage);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // Before a step's backward: no gradient has arrived.
  void begin_step();
  // The program's ALLREDUCE (REDUCE_SCATTER under ZeRO) of `bucket`: starts it, and every
  // earlier one, if the hooks have not yet. Parameters no backward reached this step count
  // as zero gradients.
  void start(int32_t bucket);
  // WAIT_ALLREDUCE: waits for the sums (`on_wait(work)` does the waiting, so the caller can
  // time it) and makes each parameter's .grad a view of its summed slice (ZeRO: the shard's
  // .grad its summed shard).
  void finish(int32_t bucket, const std::function<void(PendingWork&)>& on_wait);
  int64_t bytes(int32_t bucket) const;

  // ZeRO. The optimizer's parameters: every parameter of this rank's layers but those in
  // sharded buckets, and the buckets' shards.
  bool sharded() const { return zero_stage_ > 0; }
  std::vector<torch::Tensor> optimizer_parameters(const std::vector<torch::Tensor>& parameters) const;
  // Whether `parameter` is in one of this rank's sharded buckets (its .grad is not summed).
  bool shards(const torch::Tensor& parameter) const;
  // After WAIT_ALLREDUCE, under ZeRO: `visit(parameter, gradient)` for each parameter with
  // elements in this rank's shard of a bucket, `gradient` the summed shard's slice of them
  // (gradient clipping's norm: gradient_norm.h). Nothing without ZeRO.
  void for_each_shard_slice(const std::function<void(const torch::Tensor&, const torch::Tensor&)>& visit) const;
  // ALL_GATHER of a bucket after UPDATE: its members' updated shards into the parameters.
  void gather(int32_t bucket, const std::function<void(PendingWork&)>& on_wait);
  // For a checkpoint (collective over each bucket's group, in program order): the
  // optimizer state of each sharded parameter, gathered from the shards, under the
  // parameter itself, as an unsharded run holds it; drop_parameter_state() removes it.
  void gather_parameter_state(torch::optim::Optimizer& optimizer);
  void drop_parameter_state(torch::optim::Optimizer& optimizer);
  // After loading parameters and their optimizer state (checkpoint): each shard takes its
  // slice of both, and the parameters' own state is removed.
  void shard_loaded_state(torch::optim::Optimizer* optimizer);

 private:
  struct Bucket;
  void gradient_arrived(size_t bucket, size_t slot, const torch::Tensor& gradient);
  void start_ready_in_order();
  void launch(Bucket& bucket);
  void make_shard(Bucket& bucket, int rank) const;
  // The bucket's parameters (or, by `of`, tensors shaped like them) in one flat tensor of
  // its padded size.
  static torch::Tensor flatten(const Bucket& bucket, const std::function<torch::Tensor(size_t)>& of);

  Communicator& communicator_;
  int zero_stage_ = 0;
  std::vector<std::unique_ptr<Bucket>> buckets_;  // this rank's, in program order
  std::vector<int32_t> local_index_;              // by program bucket: index in buckets_, or -1
  size_t next_to_start_ = 0;
  std::unordered_set<const void*> sharded_parameters_;  // ZeRO: those of every bucket here
};

struct GradientBuckets::Bucket {
  std::vector<int> group;
  int member = 0;                         // this rank's position in `group`
  std::vector<torch::Tensor> parameters;  // in backward order of their layers
  std::vector<int64_t> offsets;           // of each parameter in `flat`
  std::vector<int> expected;              // by parameter: gradient contributions per step
  std::vector<int> arrived;               // by parameter: contributions so far this step
  size_t missing = 0;                     // parameters without a gradient yet
  int64_t size = 0;                       // the parameters' elements
  int64_t padded = 0;                     // `flat`'s: `size`, or under ZeRO a multiple of the group
  torch::Tensor flat;                     // [padded], the parameters' dtype: the gradients
                                          // (ZeRO: then the gathered weights)
  std::unique_ptr<PendingWork> work;      // the all-reduce or reduce-scatter in flight
  // ZeRO: this rank's shard of the flat weights [padded / group size] (the optimizer's
  // parameter) and the reduce-scatter's result, its gradient.
  torch::Tensor shard;
  torch::Tensor shard_gradient;
};

}  // namespace burst::runtime::detail
