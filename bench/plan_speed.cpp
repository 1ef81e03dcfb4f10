// Planner speed on large clusters, with the A100 cost model (built-in profile + fitted
// analytic model). The goal: inception_v3 on 1024 devices at global batch 256 and a
// 48-layer GPT-2 on 4096 devices (global batch 4096) each planned in under 1 s on one core;
// the pipeline planner's: a 48-layer GPT-2 on 1024 devices in under 2 s on one core; the
// tensor planner's: a 48-layer GPT-2 on 4096 devices in under 2 s on one core.
//
// Memory as `burst` keeps it (util::keep_freed_memory_for_reuse, in main). The first
// repetition is the cold one, as one `burst plan` run is.
//
// Each case also reports the predicted iteration times of the burst plan and of data
// parallelism on the same cluster, and their ratio, so the speed is not bought with bad plans.
#include <memory>
#include <string>

#include <benchmark/benchmark.h>

#include "burst/cluster/cluster.h"
#include "burst/cost/device_models.h"
#include "burst/cost/network.h"
#include "burst/graph/zoo.h"
#include "burst/planner/burst_planner.h"
#include "burst/timing/evaluate.h"
#include "burst/planner/pipeline_planner.h"
#include "burst/planner/tensor_planner.h"
#include "burst/util/memory_reuse.h"

namespace {

struct Case {
  const char* model;
  int devices;
  int64_t global_batch;
};

// A case's model on the built-in A100 cluster of its size, with the A100 cost model, and
// the data-parallel plan's predicted iteration time there.
struct A100World {
  explicit A100World(const Case& c)
      : graph(burst::graph::build_zoo_model(c.model)),
        cost(burst::cost::make_cost_model(burst::cost::resolve_device("a100", std::nullopt))),
        network(burst::cluster::builtin_cluster("a100", c.devices)),
        context{graph, *cost, network},
        data_parallel(
            burst::timing::evaluate_plan(burst::plan::plan_data_parallel(graph, c.devices, c.global_batch), context)
                .iteration_time) {}
  const burst::graph::Graph graph;
  const std::unique_ptr<burst::cost::CostModel> cost;
  const burst::cost::NetworkModel network;
  const burst::plan::PlanContext context;
  const burst::Seconds data_parallel;
};

void plan_case(benchmark::State& state, const Case& c) {
  const A100World world(c);
  const burst::plan::PlanContext& context = world.context;
  const burst::graph::Graph& graph = world.graph;
  burst::plan::Plan plan;
  for (auto _ : state) {
    plan = burst::planner::plan_burst(context, c.global_batch);
    benchmark::DoNotOptimize(plan);
  }
  const auto burst_time = burst::timing::evaluate_plan(plan, context).iteration_time;
  const burst::Seconds dp_time = world.data_parallel;
  state.counters["layers"] = static_cast<double>(graph.size());
  state.counters["burst_ms"] = burst_time.ms();
  state.counters["dp_ms"] = dp_time.ms();
  state.counters["dp_over_burst"] = dp_time / burst_time;
}

// The pipeline planner's search, the best candidates timed by the evaluator included.
void pipeline_case(benchmark::State& state, const Case& c) {
  const A100World world(c);
  burst::planner::PipelinePlanResult result;
  for (auto _ : state) {
    result = burst::planner::plan_pipeline(world.context, c.global_batch);
    benchmark::DoNotOptimize(result);
  }
  const burst::Seconds dp_time = world.data_parallel;
  state.counters["layers"] = static_cast<double>(world.graph.size());
  state.counters["candidates"] = result.estimated;
  state.counters["timed"] = result.timed;
  state.counters["stages"] = result.plan ? result.plan->stage_count() : 0;
  state.counters["micro_batches"] = result.plan ? static_cast<double>(result.plan->pipeline.micro_batches) : 0;
  state.counters["pipeline_ms"] = result.predicted.ms();
  state.counters["dp_ms"] = dp_time.ms();
  state.counters["dp_over_pipeline"] = dp_time / result.predicted;
}

// The tensor planner's search: every (parts, sample groups) candidate estimated, the best
// few timed by the evaluator.
void tensor_case(benchmark::State& state, const Case& c) {
  const A100World world(c);
  burst::planner::TensorPlanResult result;
  for (auto _ : state) {
    result = burst::planner::plan_tensor(world.context, c.global_batch);
    benchmark::DoNotOptimize(result);
  }
  const burst::Seconds dp_time = world.data_parallel;
  state.counters["layers"] = static_cast<double>(world.graph.size());
  state.counters["timed"] = result.timed;
  state.counters["tensor_ms"] = result.predicted.ms();
  state.counters["dp_ms"] = dp_time.ms();
  state.counters["dp_over_tensor"] = dp_time / result.predicted;
}

const Case kInception{"inception_v3", 1024, 256};
const Case kGpt2Tensor{"gpt2:layers=48", 4096, 512};
const Case kGpt2Pipeline{"gpt2:layers=48", 1024, 512};
const Case kGpt2{"gpt2:layers=48", 4096, 4096};
const Case kVgg{"vgg16", 64, 32};

}  // namespace

BENCHMARK_CAPTURE(plan_case, vgg16_64dev_b32, kVgg)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan_case, inception_v3_1024dev_b256, kInception)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan_case, gpt2_48layers_4096dev_b4096, kGpt2)->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(pipeline_case, gpt2_48layers_1024dev_b512, kGpt2Pipeline)->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(tensor_case, gpt2_48layers_4096dev_b512, kGpt2Tensor)->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  burst::util::keep_freed_memory_for_reuse();  // as burst's main
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
