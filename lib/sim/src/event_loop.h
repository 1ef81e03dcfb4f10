#pragma once
// The discrete-event loop: runs `steps` copies of a step's tasks back to back on the
// devices' compute and network ports, with an optional background job filling idle compute.
// Internal to lib/sim.
#include <cstdint>
#include <vector>

#include "burst/plan/step_timing.h"
#include "burst/sim/simulator.h"

namespace burst::sim::detail {

// The step's tasks: the step program lowered by lib/plan (step_timing.h).
using plan::StepTasks;
using plan::Task;
using plan::TaskKind;

// A background job as kernels: their durations in execution order (a forward pass, then the
// backward pass), repeated forever, and the layer each one belongs to.
struct BackgroundKernels {
  std::vector<double> duration_s;
  std::vector<int32_t> layer;
  // Per rank, the idle gaps a kernel must fit in, relative to the step's start (sorted);
  // empty: any idle moment will do.
  std::vector<std::vector<Interval>> fit_in;
};

struct KernelRun {
  double start_s = 0;
  double end_s = 0;
  int32_t kernel = 0;  // index into BackgroundKernels
};

struct LoopResult {
  // Per task instance (step x tasks + task): when it started and ended.
  std::vector<double> start_s;
  std::vector<double> end_s;
  std::vector<double> step_end_s;  // per step
  // Per rank, the background kernels it ran (empty without a background job, and for ranks
  // without foreground work, which run the background job all the time).
  std::vector<std::vector<KernelRun>> background;
  std::vector<bool> background_only;  // per rank: no foreground compute at all
};

// `background` may be null. Every rank's foreground tasks of step s + 1 wait for step s's end.
// Each rank runs its collectives one at a time; with `collectives_hold_ports` they also hold
// its message ports (see SimOptions).
LoopResult run_event_loop(const StepTasks& step, int devices, int steps, const BackgroundKernels* background,
                          bool collectives_hold_ports);

}  // namespace burst::sim::detail
