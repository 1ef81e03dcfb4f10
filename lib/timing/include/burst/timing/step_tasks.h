#pragma once
// One training step as a task graph: the step program (lib/program, what the runtime runs)
// lowered to timed tasks with dependencies, which the one task timer (task_timer.h) times
// for the evaluator (evaluate.h) and for the simulator (lib/sim, which adds background jobs
// on the timer's idle-work hook), holding messages on network ports in one order (below).
//
// Lowering, per rank's op list in order (docs/step-program.md):
//  - F, B: a Compute task at the rank's shard size (the cost model's forward or backward
//    time, at the rank's clock under the power cap: cost::clocked_time, plus
//    TimingOptions::shard_overhead), after the rank's previous compute task;
//  - SEND_F, SEND_B: a Message task (the network's point-to-point time of the piece's bytes)
//    after the sender's latest compute task; it takes no compute time;
//  - RECV_F, RECV_B of a message: the rank's next compute task waits for it (local pieces,
//    copies, take no time);
//  - SYNC_BN: a blocking Collective of 2 x channels float64 sums over the op's group after
//    every member's latest compute; each member's next compute waits for it;
//  - TP_ALLREDUCE: likewise, of the op's bytes over its tensor group (a split layer's
//    compute task is the cost model's estimate_tensor of one part);
//  - ALLREDUCE: an asynchronous Collective of the bucket's bytes over its group after every
//    member's latest compute; compute goes on. A rank's collectives run in its program
//    order: each one also waits for the rank's previous collective;
//  - WAIT_ALLREDUCE: the rank's next compute (its UPDATE) waits for the bucket's collective;
//  - UPDATE: a Compute task of the optimizer updates of the rank's layers with parameters
//    (no shard overhead; none when the cost model has no update times);
//  - WAIT_SENDS, and the step's end: a StepEnd task after every rank's last compute, every
//    message and every collective. REDUCE_LOSS is not timed (the runtime reduces the loss
//    on logged steps only; programs for timing are built without it).
//
// The timer holds messages on network ports (MessagePorts below), in one order rule: a
// task is ready when its last dependency ends, and starts then, except that a message also
// waits for its sender's send port and its receiver's receive port. A port serves messages
// one at a time, in the order they became ready; tasks ending at one moment make their
// successors ready in the order those tasks started, and a task's successors in the order
// the programs added them (a rank's sends in program order).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "burst/cost/cost_model.h"
#include "burst/plan/plan.h"
#include "burst/plan/plan_context.h"
#include "burst/program/step_program.h"
#include "burst/util/units.h"

namespace burst::timing {

using plan::PlanContext;

// The resource a task holds.
enum class TaskKind : uint8_t {
  Compute,     // one rank's compute (a layer's shard, or the rank's optimizer step)
  Message,     // one re-shard piece: the sender's send port and the receiver's receive port
  Collective,  // an all-reduce: the collective channels (optionally the ports) of its group
  StepEnd,     // the step's end: no resource, no time
};

// What a task does, as timelines and traces name it.
enum class TaskWork : uint8_t {
  Forward,
  Backward,
  Update,
  Message,
  Allreduce,
  BatchNormSync,
  TensorAllReduce,
  StepEnd,
  Recompute,      // a layer's forward again (full) or its attention core (selective)
  ReduceScatter,  // ZeRO: a bucket's gradients
  AllGather,      // ZeRO: a bucket's updated weights (1, 2) or a layer's weights (3)
  GradNorm,       // gradient clipping: the world sum of the squared gradient norm (layer -1)
  TensorReduceScatter,  // sequence parallelism: a tensor group's reduce-scatter over tokens
  TensorAllGather,      // sequence parallelism: a tensor group's all-gather over tokens
  ContextRing,          // context parallelism: what ring attention's passes leave exposed
  ExpertDispatch,       // expert parallelism: a moe layer's all-to-all of its tokens
  ExpertCombine,        // and of the experts' outputs back
};

struct Task {
  double duration_s = 0;
  TaskKind kind = TaskKind::Compute;
  TaskWork work = TaskWork::Forward;
  // Compute: the layer (-1 for Update); Message: the piece's consumer; Collective: the
  // BatchNorm layer, or the layer whose backward closes the bucket.
  int32_t layer = -1;
  int32_t rank = -1;    // Compute: its rank; Message: the sender
  int32_t peer = -1;    // Message: the receiver
  int32_t group = -1;   // Collective: index into StepTasks::groups
  // What of the program it times: Message, the index of its piece; Allreduce, of its
  // bucket (one field: a step holds millions of tasks, 40 bytes each).
  int32_t item = -1;
  // Compute: the compute-bound share of its work (cost model's compute_bound_share; 0 for
  // the memory-bound optimizer step) and the clock ratio it runs at (its rank's clock,
  // lowered further by a power cap; cost/power.h). duration_s is at that clock.
  float compute_bound = 1;
  float clock = 1;
  double bytes = 0;     // Message, Collective
};

// The tasks of one step, with dependencies as a compressed successor list (task i's
// successors are successors[successor_begin[i] .. successor_begin[i + 1]), in the order the
// programs add them). Tasks are laid out a few ops of every rank at a time, so tasks that
// run at about the same time sit together; the indices are not a topological order (a
// receiver may create the message it waits for before its sender gets there).
struct StepTasks {
  std::vector<Task> tasks;
  std::vector<int32_t> successor_begin;   // tasks.size() + 1 entries
  std::vector<int32_t> successors;
  std::vector<int32_t> dependency_count;  // within the step
  std::vector<std::vector<int>> groups;   // collectives' ranks, ascending (the program's groups)
  std::vector<int32_t> first_compute;     // per cluster rank: its first compute task, -1 if none
  int32_t step_end = -1;                  // the StepEnd task
  // Per cluster rank: the rank whose tasks stand for its own (itself when its program was
  // lowered; -1 when it holds no shard): the program's (program::BuildScope::one_rank_per_class).
  std::vector<int32_t> representative;
  // Per cluster rank: how many ranks it stands for (itself included; 0 for the others).
  std::vector<int32_t> class_size;
  // Whether some port carries two or more messages (ports_may_contend of the program):
  // only then may a message wait for a port. True unless the lowering says otherwise.
  bool messages_may_wait = true;
};

// Each device's send port and receive port (full duplex): a message holds its sender's send
// port and its receiver's receive port for its whole duration, and a port carries one
// message at a time. Claims must come in the order rule above (the task timer's).
class MessagePorts {
 public:
  explicit MessagePorts(int devices)
      : send_free_(static_cast<size_t>(devices), 0.0), receive_free_(static_cast<size_t>(devices), 0.0) {}

  // `message` (TaskKind::Message) is ready at `ready_s`: when it starts; both its ports are
  // then held until it ends.
  double claim(const Task& message, double ready_s) {
    double& send = send_free_[static_cast<size_t>(message.rank)];
    double& receive = receive_free_[static_cast<size_t>(message.peer)];
    const double start = std::max({ready_s, send, receive});
    send = receive = start + message.duration_s;
    return start;
  }
  // Both ports of each of `ranks`, ready at `ready_s` and held for `duration_s` (the
  // simulator's collectives_hold_ports): when the holding starts.
  double claim_all(const std::vector<int>& ranks, double ready_s, double duration_s) {
    double start = ready_s;
    for (const int rank : ranks) {
      start = std::max({start, send_free_[static_cast<size_t>(rank)], receive_free_[static_cast<size_t>(rank)]});
    }
    for (const int rank : ranks) {
      send_free_[static_cast<size_t>(rank)] = receive_free_[static_cast<size_t>(rank)] = start + duration_s;
    }
    return start;
  }

 private:
  std::vector<double> send_free_;     // per rank: when its send port is next free, seconds
  std::vector<double> receive_free_;
};

// Whether some port carries two or more of the program's messages. When none does, no
// message ever waits for a port and every task starts when its last dependency ends.
bool ports_may_contend(const program::StepProgram& program);

// What timing needs beyond the program.
struct TimingOptions {
  // What the program is (or was) built with: bucket_bytes, and sync_batchnorm, which also
  // selects the split BatchNorm times below. A program built with
  // BuildScope::one_rank_per_class has only the representatives' ops, and only they are
  // lowered: ranks that exchange no messages and hold shards of the same sizes in the same
  // segments have the same op lists (up to copies, which take no time), groups and updates,
  // so where no port carries two messages at all (ports_may_contend is false) each of
  // their tasks starts and ends when its representative's does. The evaluator builds such
  // programs there; the simulator, which reports per rank and runs background work, builds
  // every rank's.
  program::ProgramOptions program;
  // Added to every forward and backward shard: a runtime's fixed cost per layer call beyond
  // what a profile times.
  Seconds shard_overhead;
  // Times of shards whose layer has two or more ranks on one node (they compute in lockstep
  // and share the node); null, or no data for a layer: the context's cost model. Not owned.
  const cost::CostModel* co_located_cost = nullptr;
};

// Lowers `program` (built for the context's graph, on ranks of its cluster). A shard's time
// is asked of the cost models once per (layer, shard size), in this order: the co-located
// model's split time, the context's split time (both only for a BatchNorm on two or more
// ranks with synchronised statistics: the runtime's split implementation), the co-located
// model's time, the context's time. Throws UserError when no model has a time for a layer,
// or for clocks or a power cap on a kind without a power model (PlanContext::kind_power).
StepTasks lower_step_program(const program::StepProgram& program, const PlanContext& context,
                             const TimingOptions& options);

// Runs every compute task of a rank with a power model at clock_ratios[rank] (a ratio of its
// kind's maximum clock, by cluster rank), lowered further by options.program's power cap, as
// the lowering would have for a program with those clocks: the clock searches (planner's
// clock_search.h) re-time one lowered step instead of lowering it again. `options` must be
// those the step was lowered with.
void set_rank_clocks(StepTasks& step, const std::vector<double>& clock_ratios, const PlanContext& context,
                     const TimingOptions& options);

// The program of `plan` (valid for the context) built with options.program and `scope`
// but without the loss reduction (not timed), lowered.
StepTasks plan_step_tasks(const plan::Plan& plan, const PlanContext& context, const TimingOptions& options,
                          program::BuildScope scope = {});

}  // namespace burst::timing
