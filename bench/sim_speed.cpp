// Simulator speed on large clusters, with the A100 cost model. The goal: simulating
// inception_v3 on 1024 devices takes under 2 s. The plan is made once, outside the timed
// loop; each iteration simulates it (building the step's tasks included).
//
// Counters: the simulated iteration time, the planner's evaluator's prediction of the same
// plan (what the simulator refines), the number of events recorded for one step (shards,
// messages and collectives, per rank), and, with a background job, the foreground's
// slowdown and the cluster throughput.
#include <memory>
#include <optional>
#include <string>

#include <benchmark/benchmark.h>

#include "burst/cluster/cluster.h"
#include "burst/cost/device_models.h"
#include "burst/cost/network.h"
#include "burst/graph/zoo.h"
#include "burst/planner/burst_planner.h"
#include "burst/timing/evaluate.h"
#include "burst/sim/simulator.h"

namespace {

struct Case {
  const char* model;
  int devices;
  int64_t global_batch;
  bool data_parallel = false;
  const char* background = nullptr;  // a zoo model at 16 per device, policy fit
};

void simulate_case(benchmark::State& state, const Case& c) {
  const burst::graph::Graph graph = burst::graph::build_zoo_model(c.model);
  const burst::cost::DeviceModel device = burst::cost::resolve_device("a100", std::nullopt);
  const std::unique_ptr<burst::cost::CostModel> cost = burst::cost::make_cost_model(device);
  const burst::cost::NetworkModel network(burst::cluster::builtin_cluster("a100", c.devices));
  const burst::plan::PlanContext context{graph, *cost, network};
  const burst::plan::Plan plan = c.data_parallel ? burst::plan::plan_data_parallel(graph, c.devices, c.global_batch)
                                                 : burst::planner::plan_burst(context, c.global_batch);
  std::optional<burst::graph::Graph> background;
  burst::sim::SimOptions options;
  if (c.background != nullptr) {
    background = burst::graph::build_zoo_model(c.background);
    options = burst::sim::options_with_background(burst::sim::BackgroundJob{&*background, 16});
  }
  burst::sim::SimResult result;
  for (auto _ : state) {
    result = burst::sim::simulate(plan, context, options);
    benchmark::DoNotOptimize(result);
  }
  burst::sim::SimOptions recording = options;
  recording.iterations = 1;
  recording.warmup_iterations = 0;
  recording.background.reset();
  recording.record_events = true;
  const burst::sim::SimResult alone = burst::sim::simulate(plan, context, recording);
  state.counters["sim_ms"] = result.iteration_time.ms();
  state.counters["evaluator_ms"] = burst::timing::evaluate_plan(plan, context).iteration_time.ms();
  state.counters["events_per_step"] = static_cast<double>(alone.events.size());
  if (background) {
    state.counters["slowdown"] = result.iteration_time / alone.iteration_time;
    state.counters["cluster_samples_per_s"] = result.cluster_throughput;
  }
}

const Case kInceptionBurst{"inception_v3", 1024, 256};
const Case kInceptionDp{"inception_v3", 1024, 256, true};
const Case kInceptionBackground{"inception_v3", 1024, 256, false, "inception_v3"};
const Case kVggBurst{"vgg16", 64, 32};
// Every one of the 1024 ranks busy with every layer: the most events per step.
const Case kInceptionEveryRank{"inception_v3", 1024, 1024, true};

}  // namespace

BENCHMARK_CAPTURE(simulate_case, vgg16_64dev_b32_burst, kVggBurst)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(simulate_case, inception_v3_1024dev_b256_burst, kInceptionBurst)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(simulate_case, inception_v3_1024dev_b256_dp, kInceptionDp)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(simulate_case, inception_v3_1024dev_b256_burst_with_background, kInceptionBackground)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(simulate_case, inception_v3_1024dev_b1024_dp, kInceptionEveryRank)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
