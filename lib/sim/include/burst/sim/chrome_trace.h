#pragma once
// A simulated timeline as a Chrome trace (`{"traceEvents": [...]}`; opens in Perfetto or
// chrome://tracing), in the same layout as the runtime's `burst train --trace`: one process
// per rank, with threads for foreground compute, background kernels, sends, receives and
// collectives, and, where the devices' power is modelled, a "power" counter track (watts).
// Times in microseconds from the start of the simulation.
#include <string>

#include "burst/graph/graph.h"
#include "burst/sim/simulator.h"

namespace burst::sim {

// `result` must have its events (SimOptions::record_events). Only ranks below `max_ranks`
// are written (a 1024-device trace is too big to open); metadata says how many were left
// out. `background` names the background job's layers (null without one).
std::string chrome_trace_json(const SimResult& result, const graph::Graph& foreground,
                              const graph::Graph* background, int max_ranks);

}  // namespace burst::sim
