#pragma once
// The step program's gradient buckets on one rank, as DDP forms them: each bucket is one
// flat fp32 buffer of its layers' gradients. A hook on every parameter copies its gradient
// into the buffer as autograd computes it; once a bucket has all of its gradients, its
// all-reduce starts asynchronously while the rest of backward runs. Buckets start strictly
// in the program's order (the order every rank of a group issues them: c10d's rule), so a
// bucket that fills early waits for the ones before it. Includes libtorch.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

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
  GradientBuckets(const program::StepProgram& program, int rank,
                  const std::function<std::vector<torch::Tensor>(graph::LayerId)>& parameters,
                  const std::function<int(graph::LayerId)>& contributions, Communicator& communicator);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // Before a step's backward: no gradient has arrived.
  void begin_step();
  // The program's ALLREDUCE of `bucket`: starts it, and every earlier one, if the hooks have
  // not yet. Parameters no backward reached this step count as zero gradients.
  void start(int32_t bucket);
  // WAIT_ALLREDUCE: waits for the sums (`on_wait(work)` does the waiting, so the caller can
  // time it) and makes each parameter's .grad a view of its summed slice.
  void finish(int32_t bucket, const std::function<void(PendingWork&)>& on_wait);
  int64_t bytes(int32_t bucket) const;

 private:
  struct Bucket;
  void gradient_arrived(size_t bucket, size_t slot, const torch::Tensor& gradient);
  void start_ready_in_order();
  void launch(Bucket& bucket);

  Communicator& communicator_;
  std::vector<std::unique_ptr<Bucket>> buckets_;  // this rank's, in program order
  std::vector<int32_t> local_index_;              // by program bucket: index in buckets_, or -1
  size_t next_to_start_ = 0;
};

}  // namespace burst::runtime::detail
