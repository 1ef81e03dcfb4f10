// The auto planner (auto_planner.h): one strategy's plan fitted to memory, pins honoured or
// refused whatever the strategy, and Auto's choice the fastest of what it tried.
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "burst/cost/analytic.h"
#include "burst/cost/network.h"
#include "burst/graph/zoo.h"
#include "burst/planner/auto_planner.h"
#include "burst/planner/gpu_count_sweep.h"
#include "burst/timing/evaluate.h"
#include "burst/util/error.h"

namespace burst::planner {
namespace {

// A model on built-in A100s, planned with each device's whole memory.
struct PlanRequest {
  PlanRequest(const std::string& model, int devices)
      : graph(graph::build_zoo_model(model)), network(cluster::builtin_cluster("a100", devices)) {
    options.capacity = program::MemoryCapacity{"a100", cost::catalog_device("a100").memory};
  }
  plan::PlanContext context() const { return plan::PlanContext{graph, cost, network}; }

  graph::Graph graph;
  cost::AnalyticCostModel cost{cost::catalog_device("a100")};
  cost::NetworkModel network;
  AutoPlanOptions options;
};

const char* kTinyGpt = "gpt2:layers=4,width=64,heads=4,seq=16,vocab=64,positions=16";

std::string refusal_of(const PlanRequest& setup, int64_t batch, Strategy strategy, const AutoPlanOptions& options) {
  try {
    choose_plan(setup.context(), batch, strategy, options);
  } catch (const UserError& error) {
    return error.what();
  }
  return "";
}

TEST(AutoPlanner, OneStrategyGivesItsOwnPlanAndItsTime) {
  const PlanRequest setup("vgg16", 16);
  const ChosenPlan burst = choose_plan(setup.context(), 32, Strategy::Burst, setup.options);
  EXPECT_EQ(burst.plan.strategy, "burst");
  ASSERT_TRUE(burst.burst.has_value());  // what the burst planner said comes with its plan
  EXPECT_TRUE(burst.memory_note.empty());
  EXPECT_EQ(burst.memory.size(), 16u);
  const ChosenPlan dp = choose_plan(setup.context(), 32, Strategy::DataParallel, setup.options);
  EXPECT_EQ(dp.plan.strategy, "dp");
  EXPECT_FALSE(dp.burst.has_value());
}

TEST(AutoPlanner, AutoPicksTheFastestItTriedAndSaysWhyItSkippedTheRest) {
  const PlanRequest setup("vgg16", 16);
  const ChosenPlan chosen = choose_plan(setup.context(), 32, Strategy::Auto, setup.options);
  ASSERT_EQ(chosen.tried.size(), 5u);  // dp, burst, pipeline, hybrid, tensor: vgg16 has no attention for 3d
  double fastest = std::numeric_limits<double>::infinity();
  std::string fastest_name;
  for (const StrategyTried& tried : chosen.tried) {
    EXPECT_NE(tried.strategy, Strategy::ThreeD);
    EXPECT_TRUE(tried.time.has_value() || !tried.why_not.empty()) << strategy_name(tried.strategy);
    if (tried.time && tried.time->s() < fastest) {
      fastest = tried.time->s();
      fastest_name = strategy_name(tried.strategy);
    }
  }
  EXPECT_EQ(chosen.plan.strategy, fastest_name);
  timing::EvaluateOptions evaluate;
  evaluate.program = chosen.program;
  EXPECT_DOUBLE_EQ(timing::evaluate_plan(chosen.plan, setup.context(), evaluate).iteration_time.s(), fastest);
}

TEST(AutoPlanner, APinTheStrategyCannotTakeIsRefusedInOneLine) {
  const PlanRequest setup(kTinyGpt, 16);
  AutoPlanOptions options = setup.options;
  options.pins.tensor = 2;
  const std::string burst = refusal_of(setup, 16, Strategy::Burst, options);
  EXPECT_EQ(burst, "--tensor-parallel 2: --strategy burst splits no layer's tensors; the strategies that take it: "
                   "tensor, 3d, auto");
  options.pins = ShapePins{};
  options.pins.pipeline = 2;
  EXPECT_NE(refusal_of(setup, 16, Strategy::DataParallel, options).find("--pipeline-stages 2"), std::string::npos);
  EXPECT_EQ(refusal_of(setup, 16, Strategy::DataParallel, options).find('\n'), std::string::npos);
}

TEST(AutoPlanner, PinsNarrowAutoToTheStrategiesThatTakeThem) {
  const PlanRequest setup(kTinyGpt, 16);
  AutoPlanOptions options = setup.options;
  options.pins.tensor = 2;
  const ChosenPlan chosen = choose_plan(setup.context(), 16, Strategy::Auto, options);
  for (const StrategyTried& tried : chosen.tried) {
    const bool takes_it = tried.strategy == Strategy::Tensor || tried.strategy == Strategy::ThreeD;
    EXPECT_EQ(tried.why_not.find("--tensor-parallel 2") != std::string::npos, !takes_it)
        << strategy_name(tried.strategy) << ": " << tried.why_not;
  }
  EXPECT_TRUE(chosen.plan.strategy == "tensor" || chosen.plan.strategy == "3d") << chosen.plan.strategy;
}

TEST(AutoPlanner, NothingFittingIsOneLineWithTheSmallestRequirement) {
  PlanRequest setup("vgg16", 4);
  setup.options.capacity = program::MemoryCapacity{"a100", Bytes(1e6)};  // 1 MB per device
  const std::string refusal = refusal_of(setup, 32, Strategy::Burst, setup.options);
  EXPECT_NE(refusal.find("no plan fits"), std::string::npos) << refusal;
  EXPECT_EQ(refusal.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace burst::planner

namespace burst::planner {
namespace {

// "How many GPUs?": a 50.6M-parameter Llama on 1, 2, 4 and 8 A100s with 0.4 GB each. One GPU cannot hold
// it (SGD: 8 bytes a parameter, 405 MB of state alone); the counts that can report tokens/s per GPU consistent with their step time, and
// GPU-hours per billion tokens = GPUs / (tokens/s) x 1e9 / 3600.
TEST(GpuCountSweep, EachCountsBestPlanOrWhyNone) {
  const graph::Graph graph =
      graph::build_zoo_model("llama:layers=8,width=512,heads=8,kv_heads=2,ffn=1024,vocab=32000,seq=1024");
  const cost::AnalyticCostModel cost(cost::at_precision(cost::catalog_device("a100"), cost::Precision::Bf16));
  AutoPlanOptions options;
  options.program.precision = cost::Precision::Bf16;
  options.capacity = program::MemoryCapacity{"a100", Bytes(0.4e9)};
  EXPECT_EQ(gpu_sweep_counts(8), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(gpu_sweep_counts(12), (std::vector<int>{1, 2, 4, 8, 12}));
  const std::vector<GpuCountPoint> points =
      sweep_gpu_counts(graph, cost, "a100", {1, 2, 4, 8}, 16, Strategy::ThreeD, options, 312e12);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_FALSE(points[0].chosen.has_value());
  EXPECT_NE(points[0].why_not.find("no plan fits"), std::string::npos) << points[0].why_not;
  for (size_t i = 1; i < points.size(); ++i) {
    const GpuCountPoint& point = points[i];
    ASSERT_TRUE(point.chosen.has_value()) << point.devices << ": " << point.why_not;
    EXPECT_EQ(point.chosen->plan.devices, point.devices);
    const double tokens_per_s = 16.0 * 1024 / point.iteration.s();
    EXPECT_NEAR(point.rate.tokens_per_s_per_device, tokens_per_s / point.devices, 1e-6 * tokens_per_s);
    EXPECT_NEAR(point.gpu_hours_per_billion_tokens, point.devices * 1e9 / tokens_per_s / 3600, 1e-9 * point.devices * 1e9 / tokens_per_s);
    EXPECT_LE(point.peak_memory.value(), 0.4e9);
  }
  EXPECT_THROW(sweep_gpu_counts(graph::build_zoo_model("vgg16"), cost, "a100", {1}, 16, Strategy::ThreeD, options, 312e12),
               UserError);
}

}  // namespace
}  // namespace burst::planner
