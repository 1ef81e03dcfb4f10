// The pipeline planner on fake cost models: where stages may start, that its plans are
// valid and timed by the evaluator, that it beats data parallelism where all-reduces
// dominate, and that it finds a plan under a capacity data parallelism exceeds.
#include "burst/timing/evaluate.h"
#include "burst/planner/pipeline_planner.h"

#include <limits>

#include <gtest/gtest.h>

#include "burst/graph/builder.h"
#include "burst/graph/zoo.h"
#include "burst/util/error.h"
#include "test_world.h"

namespace burst::planner {

using namespace burst::plan;    // NOLINT: the tests state plans throughout
using namespace burst::timing;  // NOLINT: and their evaluations
using namespace burst::program;  // NOLINT: and their memory

namespace {

using testing::ms;
using testing::test_cluster;
using testing::World;

TEST(PipelinePlanner, StagesStartWhereOneTensorCrosses) {
  // In a GPT-2 block, ln_1 feeds attn while the residual skips to add_1: no boundary
  // between them. Before ln_1, ln_2 (after add_1) and the final layers one tensor crosses.
  const graph::Graph graph = graph::build_zoo_model("gpt2:layers=2,width=64,heads=2,seq=16,vocab=64");
  const std::vector<graph::LayerId> starts = valid_stage_starts(graph);
  const auto valid = [&](const std::string& name) {
    return std::count(starts.begin(), starts.end(), *graph.find(name)) == 1;
  };
  EXPECT_TRUE(valid("transformer.h.1.ln_1"));
  EXPECT_TRUE(valid("transformer.h.0.ln_2"));
  EXPECT_TRUE(valid("lm_head"));
  EXPECT_FALSE(valid("transformer.h.0.attn"));
  EXPECT_FALSE(valid("transformer.h.0.mlp.c_fc"));
  EXPECT_FALSE(valid("input_ids"));
}

// input [1000] -> l0 .. l3 (linear 1000 -> 1000: 1,001,000 parameters, 4.004 MB of fp32
// gradients each) -> loss; every layer 1 ms a sample each way. 4 devices, 1 GB/s.
World four_linear_world() {
  graph::GraphBuilder b("four_linear");
  std::string x = b.input("input", {1000});
  std::map<std::string, cost::FakeLayerCost> costs{{"input", {ms(0), ms(0)}}, {"loss", {ms(0), ms(0)}}};
  for (int k = 0; k < 4; ++k) {
    const std::string name = "l" + std::to_string(k);
    x = b.linear(name, x, 1000);
    costs[name] = {ms(0, 1), ms(0, 1)};
  }
  b.cross_entropy("loss", x);
  return World(std::move(b).build(), test_cluster(4, 1e9, 0), std::move(costs));
}

TEST(PipelinePlanner, BeatsDataParallelWhereAllReducesDominate) {
  // Global batch 8. Data parallel: 2 samples a rank, 4 x 2 x 2 ms = 16 ms of compute, then
  // the last bucket's all-reduce of 16 MB of gradients over 4 ranks (ring: 2 x 3/4 x
  // 16 MB / 1 GB/s = 24 ms) ends the step: over 24 ms. A 4-stage pipeline all-reduces
  // nothing (a stage is one rank) and takes (m + p - 1) x 2 ms a sample x micro-batch.
  const World world = four_linear_world();
  const Seconds data_parallel = evaluate_plan(plan_data_parallel(world.graph, 4, 8), world.context()).iteration_time;
  const PipelinePlanResult result = plan_pipeline(world.context(), 8);
  ASSERT_TRUE(result.plan.has_value());
  validate_plan(*result.plan, world.graph, world.network.cluster());
  EXPECT_LT(result.predicted, data_parallel);
  EXPECT_GE(result.plan->stage_count(), 2);
  EXPECT_GT(result.estimated, result.timed);
  // The prediction is the evaluator's.
  EXPECT_DOUBLE_EQ(evaluate_plan(*result.plan, world.context()).iteration_time.s(), result.predicted.s());
}

TEST(PipelinePlanner, FindsAPlanThatFitsWhereDataParallelDoesNot) {
  // With Adam, each linear layer needs 1,001,000 x 16 B = 16.0 MB (weights, gradients, two
  // moments): data parallelism holds all four on every rank, 64.1 MB and its activations.
  // Under a 40 MB capacity it does not fit; stages of one or two layers do.
  const World world = four_linear_world();
  const MemoryCapacity capacity{"test", Bytes(40e6)};
  const std::vector<DeviceMemory> data_parallel =
      plan_memory(plan_data_parallel(world.graph, 4, 8), world.graph, cost::Optimizer::Adam);
  EXPECT_GT(peak_memory(data_parallel).use.total().value(), 64e6);
  EXPECT_THROW(fit_in_memory(plan_data_parallel(world.graph, 4, 8), "data-parallel", world.graph,
                             cost::Optimizer::Adam, capacity),
               UserError);

  PipelineOptions options;
  options.capacity = capacity;
  options.optimizer = cost::Optimizer::Adam;
  const PipelinePlanResult result = plan_pipeline(world.context(), 8, options);
  ASSERT_TRUE(result.plan.has_value());
  validate_plan(*result.plan, world.graph, world.network.cluster());
  const std::vector<DeviceMemory> memory = plan_memory(*result.plan, world.graph, cost::Optimizer::Adam);
  EXPECT_LT(peak_memory(memory).use.total().value(), 40e6);

  // 10 MB: not even one layer fits on a device.
  options.capacity = MemoryCapacity{"test", Bytes(10e6)};
  EXPECT_FALSE(plan_pipeline(world.context(), 8, options).plan.has_value());
}

TEST(PipelinePlanner, TheHybridTakesTheBurstPlacementsInsideEachStage) {
  // With burst placements inside the stages, each stage's layers keep to its own ranks, and
  // each stage's placements are the burst plan's at the micro-batch on that many devices.
  const World world = four_linear_world();
  PipelineOptions options;
  options.burst_stages = true;
  options.burst.amplification = std::numeric_limits<double>::infinity();
  const PipelinePlanResult result = plan_pipeline(world.context(), 8, options);
  ASSERT_TRUE(result.plan.has_value() && result.hybrid.has_value());
  const Plan& hybrid = *result.hybrid;
  validate_plan(hybrid, world.graph, world.network.cluster());
  EXPECT_EQ(hybrid.strategy, "hybrid");
  EXPECT_EQ(result.plan->strategy, "pipeline");
  EXPECT_DOUBLE_EQ(evaluate_plan(hybrid, world.context()).iteration_time.s(), result.hybrid_predicted.s());
  // One search gives both; the hybrid alone gives the same hybrid.
  options.data_parallel_stages = false;
  const PipelinePlanResult alone = plan_pipeline(world.context(), 8, options);
  EXPECT_FALSE(alone.plan.has_value());
  ASSERT_TRUE(alone.hybrid.has_value());
  EXPECT_EQ(plan_to_json_text(*alone.hybrid), plan_to_json_text(hybrid));
  // Stage s's ranks all come after stage s - 1's (validate_plan: no rank in two stages).
  for (int stage = 1; stage < hybrid.stage_count(); ++stage) {
    EXPECT_GT(hybrid.stage_ranks(stage).front(), hybrid.stage_ranks(stage - 1).back());
  }
}

TEST(PipelinePlanner, ABatchNormModelPlansOneMicroBatch) {
  graph::GraphBuilder b("bn");
  b.cross_entropy("loss", b.flatten("flat", b.batchnorm2d("bn", b.relu("relu", b.input("input", {2, 2, 2})))));
  const World world(std::move(b).build(), test_cluster(2, 1e9, 0),
                    {{"input", {ms(0), ms(0)}}, {"relu", {ms(0, 1), ms(0, 1)}}, {"bn", {ms(0, 1), ms(0, 1)}},
                     {"flat", {ms(0), ms(0)}}, {"loss", {ms(0), ms(0)}}});
  const PipelinePlanResult result = plan_pipeline(world.context(), 4);
  ASSERT_TRUE(result.plan.has_value());
  EXPECT_EQ(result.plan->pipeline.micro_batches, 1);
  validate_plan(*result.plan, world.graph, world.network.cluster());
}

}  // namespace
}  // namespace burst::planner
