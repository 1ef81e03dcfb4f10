// 3-D plans (parallel_shape.h) and the 3-D search (three_d_planner.h) on a tiny GPT-2.
#include <set>

#include <gtest/gtest.h>

#include "burst/cost/analytic.h"
#include "burst/cost/network.h"
#include "burst/graph/zoo.h"
#include "burst/planner/parallel_shape.h"
#include "burst/planner/step_terms.h"
#include "burst/planner/three_d_planner.h"
#include "burst/program/step_memory.h"
#include "burst/program/step_program.h"
#include "burst/timing/evaluate.h"
#include "burst/util/error.h"

namespace burst::planner {
namespace {

// gpt2 with 4 blocks of width 64 and 4 heads on 16 built-in A100s (2 nodes of 8).
struct TinyGpt {
  graph::Graph graph = graph::build_zoo_model("gpt2:layers=4,width=64,heads=4,seq=16,vocab=64,positions=16");
  cost::AnalyticCostModel cost{cost::catalog_device("a100")};
  cost::NetworkModel network{cluster::builtin_cluster("a100", 16)};
  plan::PlanContext context() const { return plan::PlanContext{graph, cost, network}; }
};

std::string refusal(const TinyGpt& gpt, int64_t batch, const ParallelShape& shape) {
  try {
    check_shape(gpt.graph, 16, batch, shape);
  } catch (const UserError& error) {
    return error.what();
  }
  return "";
}

TEST(ParallelShape, RanksFollowMegatronsLayout) {
  const TinyGpt gpt;
  // t = 2, p = 2, d = 4, b = 2 at global batch 16: 16 / (4 x 2) = 2 micro-batches of 8.
  const ParallelShape shape{2, 2, 4, 2, plan::Schedule::OneFOneB};
  const plan::Plan plan = plan_shape(gpt.context(), 16, shape);
  plan::validate_plan(plan, gpt.graph, gpt.network.cluster());
  EXPECT_EQ(plan.strategy, "3d");
  EXPECT_EQ(plan.pipeline.micro_batches, 2);
  ASSERT_EQ(plan.stage_count(), 2);
  // The first block's attention is on stage 0: sample group g's parts q on ranks 2g + q,
  // samples [2g, 2g + 2) of the micro-batch, split by heads.
  const plan::LayerPlacement& attention = plan.layers[static_cast<size_t>(*gpt.graph.find("transformer.h.0.attn"))];
  EXPECT_EQ(attention.split.kind, cost::SplitKind::Heads);
  ASSERT_EQ(attention.shards.size(), 8u);
  for (int g = 0; g < 4; ++g) {
    for (int q = 0; q < 2; ++q) {
      const cost::Shard& shard = attention.shards[static_cast<size_t>(2 * g + q)];
      EXPECT_EQ(shard.rank, 2 * g + q);
      EXPECT_EQ(shard.samples.begin, 2 * g);
      EXPECT_EQ(shard.samples.end, 2 * g + 2);
    }
  }
  // The loss is on the last stage (ranks 8 to 15), each group's 2 samples split over its 2
  // parts: sample 2g + q on rank 8 + 2g + q.
  const plan::LayerPlacement& loss = plan.layers.back();
  EXPECT_EQ(plan.stage_of(static_cast<graph::LayerId>(plan.layers.size() - 1)), 1);
  ASSERT_EQ(loss.shards.size(), 8u);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(loss.shards[static_cast<size_t>(r)].rank, 8 + r);
    EXPECT_EQ(loss.shards[static_cast<size_t>(r)].samples.begin, r);
  }
  const program::StepProgram program = program::build_step_program(gpt.graph, plan);
  program::check_step_program(program, gpt.graph, plan);
}

TEST(ParallelShape, RefusesWhatTheModelClusterOrBatchCannotTake) {
  const TinyGpt gpt;
  EXPECT_EQ(refusal(gpt, 16, ParallelShape{1, 1, 15, 1}), "TP 1 x PP 1 x DP 15, micro-batch 1, 1f1b uses 15 devices, but the cluster has 16");
  EXPECT_EQ(refusal(gpt, 16, ParallelShape{3, 1, 5, 1}), "--tensor-parallel 3 does not divide the 4 heads of 'transformer.h.0.attn'");
  EXPECT_EQ(refusal(gpt, 16, ParallelShape{8, 1, 2, 1}), "--tensor-parallel 8 does not divide the 4 heads of 'transformer.h.0.attn'");
  EXPECT_EQ(refusal(gpt, 16, ParallelShape{2, 2, 4, 3}),
            "--micro-batch-size 3 does not divide the batch share 4 (global batch 16 over 4 data-parallel groups)");
  EXPECT_EQ(refusal(gpt, 12, ParallelShape{1, 1, 16, 1}), "global batch 12 does not split evenly over 16 data-parallel groups");
  EXPECT_NE(refusal(gpt, 16, ParallelShape{1, 16, 1, 1}).find("can be cut into at most"), std::string::npos);
  EXPECT_EQ(refusal(gpt, 16, ParallelShape{2, 2, 4, 2}), "");
}

TEST(ThreeDPlanner, HonoursPinsAndTimesWhatItReturns) {
  const TinyGpt gpt;
  ThreeDOptions options;
  options.pins.tensor = 2;
  options.pins.recompute = cost::Recompute::Full;
  const ThreeDResult result = plan_3d(gpt.context(), 16, options);
  EXPECT_EQ(result.shape.tensor, 2);
  EXPECT_EQ(result.program.recompute, cost::Recompute::Full);
  EXPECT_GT(result.candidates, 1);
  EXPECT_EQ(result.fitting, result.candidates);  // no capacity given
  timing::EvaluateOptions evaluate;
  evaluate.program = result.program;
  EXPECT_DOUBLE_EQ(timing::evaluate_plan(result.plan, gpt.context(), evaluate).iteration_time.s(), result.predicted.s());
}

TEST(ThreeDPlanner, NoPlanFitsNamesTheSmallestRequirement) {
  const TinyGpt gpt;
  ThreeDOptions options;
  options.capacity = program::MemoryCapacity{"a100", Bytes(1e3)};
  try {
    plan_3d(gpt.context(), 16, options);
    ADD_FAILURE() << "expected no plan to fit in 1 kB";
  } catch (const UserError& error) {
    const std::string text = error.what();
    EXPECT_EQ(text.rfind("no plan fits in memory (optimizer sgd, precision fp32): the smallest requirement found is TP", 0), 0u)
        << text;
    EXPECT_NE(text.find("of 1.00 kB per a100"), std::string::npos) << text;
  }
  // A pinned shape the model cannot take is refused with check_shape's reason.
  options.capacity.reset();
  options.pins.tensor = 3;
  EXPECT_THROW(plan_3d(gpt.context(), 16, options), UserError);
}

// 3-D plans' data-parallel replicas mirror each other: the evaluator times one replica's
// ranks (program::StepProgram::mirrored) and must give what timing every rank gives, under
// both schedules, with ZeRO and recomputation, on one node and across nodes.
TEST(ThreeDPlanner, MirroredReplicasTimeAsEveryRank) {
  const TinyGpt gpt;
  const cost::NetworkModel two_nodes{cluster::builtin_cluster("a100", 16)};
  const std::vector<ParallelShape> shapes = {
      ParallelShape{2, 2, 4, 1, plan::Schedule::OneFOneB}, ParallelShape{2, 2, 4, 2, plan::Schedule::GPipe},
      ParallelShape{1, 4, 4, 1, plan::Schedule::OneFOneB}, ParallelShape{4, 2, 2, 2, plan::Schedule::OneFOneB}};
  for (const ParallelShape& shape : shapes) {
    const plan::Plan plan = plan_shape(gpt.context(), 16, shape);
    program::BuildScope scope;
    scope.one_rank_per_class = true;
    EXPECT_TRUE(program::build_step_program(gpt.graph, plan, {}, scope).mirrored) << shape_text(shape);
    for (const int zero : {0, 1, 3}) {
      timing::EvaluateOptions reduced, every_rank;
      reduced.program.zero_stage = every_rank.program.zero_stage = zero;
      reduced.program.recompute = every_rank.program.recompute = cost::Recompute::Full;
      every_rank.time_each_rank = true;
      const timing::PlanEvaluation a = timing::evaluate_plan(plan, gpt.context(), reduced);
      const timing::PlanEvaluation b = timing::evaluate_plan(plan, gpt.context(), every_rank);
      EXPECT_DOUBLE_EQ(a.iteration_time.s(), b.iteration_time.s()) << shape_text(shape) << ", ZeRO " << zero;
      EXPECT_NEAR(a.device_seconds.s(), b.device_seconds.s(), 1e-12 * b.device_seconds.s()) << shape_text(shape);
    }
  }
}

// Context parallelism's program is the context groups' lifted onto their devices: it passes
// check_step_program with tensor groups (and SP), stages, data parallelism, ZeRO and HSDP
// beside it, and one rank per class times as every rank.
TEST(ThreeDPlanner, ContextGroupsLiftOntoTheirDevices) {
  const TinyGpt gpt;
  const auto with_context = [](ParallelShape shape, int context) {
    shape.context = context;
    return shape;
  };
  const std::vector<ParallelShape> shapes = {
      with_context(ParallelShape{2, 2, 2, 1, plan::Schedule::OneFOneB, true}, 2),
      with_context(ParallelShape{1, 2, 2, 2, plan::Schedule::OneFOneB}, 4),
      with_context(ParallelShape{2, 1, 2, 1, plan::Schedule::OneFOneB}, 4),
      with_context(ParallelShape{2, 2, 1, 1, plan::Schedule::OneFOneB}, 4)};
  for (const ParallelShape& shape : shapes) {
    const plan::Plan plan = plan_shape(gpt.context(), 16, shape);
    plan::validate_plan(plan, gpt.graph, gpt.network.cluster());
    EXPECT_EQ(plan.context_parallel, shape.context);
    for (const int zero : {0, 3}) {
      for (const int shard : {0, 1, 2}) {  // (shard 1: each sample group over its context ranks alone)
        if (shard > 0 && (zero != 3 || shape.data % shard != 0)) continue;
        timing::EvaluateOptions reduced, every_rank;
        reduced.program.zero_stage = every_rank.program.zero_stage = zero;
        reduced.program.fsdp_shard = every_rank.program.fsdp_shard = shard;
        reduced.program.recompute = every_rank.program.recompute = cost::Recompute::Selective;
        every_rank.time_each_rank = true;
        const program::StepProgram program = program::build_step_program(gpt.graph, plan, reduced.program);
        program::check_step_program(program, gpt.graph, plan);
        const timing::PlanEvaluation a = timing::evaluate_plan(plan, gpt.context(), reduced);
        const timing::PlanEvaluation b = timing::evaluate_plan(plan, gpt.context(), every_rank);
        EXPECT_DOUBLE_EQ(a.iteration_time.s(), b.iteration_time.s()) << shape_text(shape) << ", ZeRO " << zero;
      }
    }
  }
  EXPECT_EQ(refusal(gpt, 16, with_context(ParallelShape{1, 1, 1, 1}, 16)),
            "--context-parallel 16 cuts each sample's 16 tokens (--seq) into 32 chunks, two a rank, which do not "
            "divide them");
}

// A step's terms add up to its time: compute and recompute on the busiest rank, the bubble
// with free links, and the communication the free links take away.
TEST(StepTerms, AddUpToTheStepAndNameWhatTheyCount) {
  const TinyGpt gpt;
  const plan::Plan plan = plan_shape(gpt.context(), 16, ParallelShape{2, 2, 4, 1, plan::Schedule::OneFOneB});
  program::ProgramOptions program;
  program.recompute = cost::Recompute::Full;
  timing::EvaluateOptions options;
  options.program = program;
  const timing::PlanEvaluation evaluated = timing::evaluate_plan(plan, gpt.context(), options);
  const StepTerms terms = step_terms(plan, gpt.context(), program, evaluated);
  EXPECT_DOUBLE_EQ(terms.iteration, evaluated.iteration_time.s());
  EXPECT_NEAR(terms.compute + terms.recompute + terms.bubble + terms.communication, terms.iteration,
              1e-12 * terms.iteration);
  EXPECT_GT(terms.recompute, 0);
  EXPECT_GT(terms.bubble, 0);         // 2 stages, 2 micro-batches
  EXPECT_GT(terms.communication, 0);  // tensor all-reduces on NVLink
  options.program.recompute = program.recompute = cost::Recompute::None;
  EXPECT_EQ(step_terms(plan, gpt.context(), program, timing::evaluate_plan(plan, gpt.context(), options)).recompute, 0);
}

TEST(StepTerms, MarksDimensionsNoCheckedRunCovers) {
  PlanDimensions d;
  EXPECT_TRUE(unchecked_dimensions(d).empty());
  d.schedule = plan::Schedule::ZeroBubbleH1;
  d.zero_stage = 3;
  d.data = 256;
  const std::vector<std::string> unchecked = unchecked_dimensions(d);
  ASSERT_EQ(unchecked.size(), 2u);
  EXPECT_EQ(unchecked[0], "ZB-H1: no published run checks it");
  EXPECT_EQ(unchecked[1], "ZeRO 3 over 256 data-parallel ranks: the largest checked is 128 (torchtitan Table 3)");
}

// The search counts the memory of one data-parallel replica (the ranks holding samples
// [0, b) of a micro-batch): every replica needs the same, so its peak is the plan's.
TEST(ThreeDPlanner, OneReplicaNeedsWhatEveryReplicaNeeds) {
  const TinyGpt gpt;
  for (const ParallelShape& shape : {ParallelShape{2, 2, 4, 1}, ParallelShape{4, 1, 4, 2}, ParallelShape{1, 2, 8, 2}}) {
    const plan::Plan plan = plan_shape(gpt.context(), 16, shape);
    std::set<int> replica;
    for (const plan::LayerPlacement& placement : plan.layers) {
      for (const cost::Shard& shard : placement.shards) {
        if (shard.samples.begin < shape.micro_batch) replica.insert(shard.rank);
      }
    }
    EXPECT_EQ(static_cast<int>(replica.size()), shape.tensor * shape.pipeline) << shape_text(shape);
    for (const int zero : {0, 1, 3}) {
      program::ProgramOptions options;
      options.zero_stage = zero;
      options.recompute = cost::Recompute::Full;
      const auto all = program::plan_memory(plan, gpt.graph, cost::Optimizer::Adam, options);
      const auto one = program::plan_memory_of_ranks(plan, gpt.graph, cost::Optimizer::Adam, options,
                                                     program::select_ranks(plan, {replica.begin(), replica.end()}));
      EXPECT_EQ(program::peak_memory(one).use.total().value(), program::peak_memory(all).use.total().value())
          << shape_text(shape) << ", ZeRO " << zero;
    }
  }
}

}  // namespace
}  // namespace burst::planner
