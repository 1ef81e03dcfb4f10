#pragma once
// One training step of a plan as a task graph (what the simulator's event loop runs, once
// per step). Internal to lib/sim.
#include <cstdint>
#include <vector>

#include "burst/plan/evaluate.h"
#include "burst/plan/plan.h"
#include "burst/sim/simulator.h"

namespace burst::sim::detail {

enum class TaskKind : uint8_t {
  Compute,     // one rank's shard of a layer's forward or backward: holds the rank's compute
  Message,     // one re-shard piece: holds the sender's send port and the receiver's receive port
  Collective,  // an all-reduce: holds the send and receive ports of all its ranks
  StepEnd,     // the step's end: no resource, no time
};

struct Task {
  double duration_s = 0;
  TaskKind kind = TaskKind::Compute;
  EventKind event = EventKind::Forward;  // what a trace calls it (unused for StepEnd)
  int32_t layer = -1;
  int32_t rank = -1;   // Compute: its rank; Message: the sender
  int32_t peer = -1;   // Message: the receiver
  int32_t group = -1;  // Collective: index into StepTasks::groups
  double bytes = 0;    // Message, Collective
};

// The tasks of one step, with dependencies as a compressed successor list (task i's
// successors are successors[successor_begin[i] .. successor_begin[i + 1])).
struct StepTasks {
  std::vector<Task> tasks;
  std::vector<int32_t> successor_begin;  // tasks.size() + 1 entries
  std::vector<int32_t> successors;
  std::vector<int32_t> dependency_count;  // within the step
  std::vector<std::vector<int>> groups;   // collectives' ranks, ascending
  std::vector<int32_t> first_compute;     // per rank: its first task, -1 when it has none
  int32_t step_end = -1;                  // the StepEnd task
};

// Builds the step's tasks (see simulator.h for the model). Layer times come from the
// context's cost model at each shard's size (plus options.shard_overhead); messages and
// collectives from its network; BatchNorm syncs per options.batchnorm.
StepTasks build_step_tasks(const plan::Plan& plan, const plan::PlanContext& context, const SimOptions& options);

}  // namespace burst::sim::detail
