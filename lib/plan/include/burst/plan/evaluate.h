#pragma once
// Predicting one training iteration of a plan: the schedule the planner optimises and every
// report (`burst plan`, sweeps, pictures) prints. docs/planner.md explains the model; in
// short:
//  - forward runs layers in graph order, then backward in reverse graph order (the loss
//    backward starts when the whole forward, every loss included, is done);
//  - a layer starts when all its inputs have arrived and all its ranks are free; each rank
//    computes its own shard (cost model at the shard's size); the layer is done when its
//    largest shard is;
//  - an input arrives a re-shard after its producer is done (NetworkModel::reshard of the
//    derived transfers; gradients take the same path back, same size); transfers do not
//    occupy compute;
//  - a layer's weight-gradient all-reduce starts when its backward is done and every rank
//    of its sync group has finished its earlier all-reduces (one communication queue per
//    rank, running beside compute), so it overlaps the rest of backward;
//  - each rank then updates the parameters of its layers (the optimizer step, cost model's
//    update() per layer; 0 where it has no data), after its last backward and all-reduce;
//  - the iteration ends when the last rank's update has.
#include <vector>

#include "burst/cost/cost_model.h"
#include "burst/cost/network.h"
#include "burst/graph/graph.h"
#include "burst/plan/plan.h"
#include "burst/util/units.h"

namespace burst::plan {

// What a planner or an evaluation needs to know about the world. References: the caller
// keeps the three alive.
struct PlanContext {
  const graph::Graph& graph;
  const cost::CostModel& cost;
  const cost::NetworkModel& network;  // and through it the cluster
};

enum class ActivityKind { Forward, Backward, Transfer, Allreduce, Update };
const char* activity_kind_name(ActivityKind kind);

// One interval of one rank's timeline (seconds from the start of the iteration).
struct Activity {
  double start_s = 0;
  double end_s = 0;
  ActivityKind kind = ActivityKind::Forward;
  graph::LayerId layer = 0;  // the layer computed, received into (Transfer) or synchronised;
                             // -1 for Update (all of the rank's layers)
};

struct LayerTiming {
  int devices = 0;
  int64_t per_device_batch = 0;  // the largest shard
  Seconds forward;               // compute of the largest shard
  Seconds backward;
  Seconds transfer;       // slowest input re-shard into this layer (forward; backward alike)
  Seconds sync;           // the weight-gradient all-reduce (0 without a sync group)
  Seconds update;         // the optimizer's update of its parameters, on each of its ranks
  double amplification = 0;  // devices x (forward + backward) / one-device time at the batch
  double forward_start_s = 0, forward_end_s = 0;
  double backward_start_s = 0, backward_end_s = 0;
  double sync_end_s = 0;  // when the all-reduce is done (backward_end_s without one)
};

struct PlanEvaluation {
  Seconds iteration_time;
  // Compute time summed over ranks (each rank at its own shard, and its updates): what the
  // plan occupies.
  Seconds device_seconds;
  // devices x iteration_time - device_seconds: what a background job could use, waits for
  // transfers and all-reduces included.
  Seconds idle_device_seconds;
  // Every layer at the whole global batch on one device, and one update of every layer, no
  // communication.
  Seconds one_device_compute;
  std::vector<LayerTiming> layers;  // by layer id
  // Per rank, in start order; filled only when asked for (it holds ranks x layers entries).
  std::vector<std::vector<Activity>> timelines;

  // device_seconds / one_device_compute: 1 means no work is wasted by splitting.
  double mean_amplification() const {
    return one_device_compute.s() > 0 ? device_seconds / one_device_compute : 1.0;
  }
};

struct EvaluateOptions {
  bool timelines = false;  // fill PlanEvaluation::timelines
};

// Predicts one iteration of `plan`. The plan must be valid for the context (validate_plan);
// throws UserError when the cost model has no time for a layer.
PlanEvaluation evaluate_plan(const Plan& plan, const PlanContext& context,
                             const EvaluateOptions& options = {});

// The plan that puts every layer on rank 0 with the whole batch (the one-device baseline).
Plan plan_single_device(const graph::Graph& graph, int devices, int64_t global_batch);

}  // namespace burst::plan
