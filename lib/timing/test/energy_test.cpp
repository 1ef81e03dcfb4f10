// The energy of a step worked out by hand (in the comments): idle, compute and
// communication power over a two-rank timeline.
#include "burst/timing/energy.h"

#include <gtest/gtest.h>

#include "burst/graph/builder.h"
#include "burst/timing/evaluate.h"
#include "hand_plan.h"
#include "test_world.h"

namespace burst::timing {
namespace energy_test {

using plan::testing::hand_plan;
using plan::testing::ms;
using plan::testing::shard;

// input [1, 2, 2] (16 bytes a sample) -> a -> b, a on rank 0 and b on rank 1, batch 2: the
// 32-byte activation and its gradient each take 2 ms at 16000 B/s.
struct TwoRanks {
  TwoRanks()
      : world(graph(), plan::testing::test_cluster(2, 16000, 0),
              {{"input", cost::FakeLayerCost{ms(0), ms(0)}}, {"a", cost::FakeLayerCost{ms(4), ms(0)}}, {"b", cost::FakeLayerCost{ms(2), ms(0)}}}) {}
  static graph::Graph graph() {
    graph::GraphBuilder b("two");
    std::string x = b.input("input", {1, 2, 2});
    x = b.relu("a", x);
    b.relu("b", x);
    return std::move(b).build();
  }
  plan::PlanContext context() const {
    plan::PlanContext context = world.context();
    context.kind_power = {cost::round_power_spec()};
    return context;
  }
  plan::Plan plan() const {
    return hand_plan(world.graph, 2, 2, {{shard(0, 0, 2)}, {shard(0, 0, 2)}, {shard(1, 0, 2)}});
  }
  plan::testing::World world;
};

// Rank 0: F a [0, 4] ms; the activation [4, 6] to rank 1; F b [6, 8] on rank 1; its
// gradient [8, 10] back; B a [10, 10]. The step takes 10 ms.
// Rank 0: compute 4 ms at 500 W = 2 J; two messages 2 ms each at +100 W = 0.4 J; idle
// 6 ms at 100 W = 0.6 J: 3.0 J. Rank 1: compute 2 ms x 500 W = 1 J, messages 0.4 J, idle
// 8 ms x 100 W = 0.8 J: 2.2 J. In all 5.2 J.
TEST(StepEnergy, TwoRanksWithIdleComputeAndCommunication) {
  const TwoRanks two;
  const PlanEvaluation evaluation = evaluate_plan(two.plan(), two.context());
  ASSERT_NEAR(evaluation.iteration_time.ms(), 10, 1e-9);
  ASSERT_TRUE(evaluation.energy.known);
  ASSERT_EQ(evaluation.energy.devices.size(), 2u);
  const DeviceEnergy& r0 = evaluation.energy.devices[0];
  const DeviceEnergy& r1 = evaluation.energy.devices[1];
  EXPECT_NEAR(r0.compute_j, 2.0, 1e-9);
  EXPECT_NEAR(r0.communication_j, 0.4, 1e-9);
  EXPECT_NEAR(r0.idle_j, 0.6, 1e-9);
  EXPECT_NEAR(r1.compute_j, 1.0, 1e-9);
  EXPECT_NEAR(r1.communication_j, 0.4, 1e-9);
  EXPECT_NEAR(r1.idle_j, 0.8, 1e-9);
  EXPECT_NEAR(evaluation.energy.total_j, 5.2, 1e-9);
}

// A power cap of 300 W holds compute-bound work at r = sqrt(0.5) (300 = 100 + 400 r^2):
// a takes 4 / r ms and b 2 / r, each at 300 W.
TEST(StepEnergy, PowerCapSlowsComputeToTheDerivedClock) {
  const TwoRanks two;
  EvaluateOptions options;
  options.program.power_cap_w = 300;
  const PlanEvaluation evaluation = evaluate_plan(two.plan(), two.context(), options);
  const double r = std::sqrt(0.5);
  // (the task keeps its clock as a float: about 7 digits)
  EXPECT_NEAR(evaluation.iteration_time.ms(), 4 / r + 2 + 2 / r + 2, 1e-6);
  EXPECT_NEAR(evaluation.energy.devices[0].compute_j, 4 / r * 0.3, 1e-6);
  EXPECT_NEAR(evaluation.energy.devices[1].compute_j, 2 / r * 0.3, 1e-6);
}

TEST(StepEnergy, UnknownWithoutAPowerModelAndCapsNeedOne) {
  const TwoRanks two;
  const PlanEvaluation evaluation = evaluate_plan(two.plan(), two.world.context());
  EXPECT_FALSE(evaluation.energy.known);
  EvaluateOptions options;
  options.program.power_cap_w = 300;
  EXPECT_THROW(evaluate_plan(two.plan(), two.world.context(), options), UserError);
  options.program.power_cap_w = 50;  // below idle
  EXPECT_THROW(evaluate_plan(two.plan(), two.context(), options), UserError);
}

}  // namespace energy_test
}  // namespace burst::timing
