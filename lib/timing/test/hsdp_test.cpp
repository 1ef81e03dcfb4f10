// HSDP (ProgramOptions::fsdp_shard) by hand: 8 data-parallel ranks in shard groups of 4. Each
// rank gathers a layer's weights over its own shard group, reduce-scatters each bucket over
// it and all-reduces its shard (a quarter of the bucket) over the 2 ranks holding the same
// shard; the timer charges the two back to back, and each rank holds a quarter of the state.
#include <gtest/gtest.h>

#include "burst/graph/builder.h"
#include "burst/program/step_memory.h"
#include "burst/program/step_program.h"
#include "burst/timing/step_tasks.h"
#include "burst/util/error.h"
#include "test_world.h"

namespace burst::timing {
namespace {

using plan::testing::ms;
using plan::testing::test_cluster;
using plan::testing::World;

// 8 ranks, 1 GB/s links without latency; one 16 x 16 linear (272 parameters).
World hsdp_world() {
  graph::GraphBuilder b("hsdp");
  b.linear("fc", b.input("input", {16}), 16);
  return World(std::move(b).build(), test_cluster(8, 1e9, 0),
               {{"input", {ms(0), ms(0)}}, {"fc", {ms(1), ms(2)}}}, {{"fc", Seconds::from_ms(1)}});
}

program::ProgramOptions hsdp(int shard) {
  program::ProgramOptions options;
  options.zero_stage = 3;
  options.fsdp_shard = shard;
  return options;
}

std::vector<int> group(const program::StepProgram& program, int32_t index) {
  return index < 0 ? std::vector<int>{} : program.groups.at(static_cast<size_t>(index));
}

TEST(Hsdp, GathersAndReductionsRunOverShardGroups) {
  const World world = hsdp_world();
  const plan::Plan plan = plan::plan_data_parallel(world.graph, 8, 8);
  const program::StepProgram program = program::build_step_program(world.graph, plan, hsdp(4));
  const graph::LayerId fc = *world.graph.find("fc");
  for (int rank = 0; rank < 8; ++rank) {
    const std::vector<int> shard = rank < 4 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{4, 5, 6, 7};
    const std::vector<int> replicas = {rank % 4, rank % 4 + 4};
    int gathers = 0, reductions = 0;
    for (const program::Op& op : program.ops[static_cast<size_t>(rank)]) {
      if (op.kind == program::OpKind::AllGather) {
        ++gathers;
        EXPECT_EQ(op.layer, fc);
        EXPECT_EQ(group(program, op.group), shard) << "rank " << rank;
        EXPECT_EQ(op.bytes, 272 * 4);  // the whole fp32 weights, gathered before F and before B
      }
      if (op.kind == program::OpKind::ReduceScatter) {
        ++reductions;
        EXPECT_EQ(group(program, op.group), shard) << "rank " << rank;
        EXPECT_EQ(group(program, op.replica_group), replicas) << "rank " << rank;
      }
    }
    EXPECT_EQ(gathers, 2);
    EXPECT_EQ(reductions, 1);
  }
  program::check_step_program(program, world.graph, plan);
  // Full sharding over all 8: one gather group, no replica groups.
  const program::StepProgram full = program::build_step_program(world.graph, plan, hsdp(0));
  for (const program::Op& op : full.ops[5]) {
    if (op.kind == program::OpKind::ReduceScatter) {
      EXPECT_EQ(op.replica_group, -1);
    }
    if (op.kind == program::OpKind::AllGather) {
      EXPECT_EQ(group(full, op.group).size(), 8u);
    }
  }
}

TEST(Hsdp, TheTimerChargesTheReduceScatterThenTheReplicaAllReduce) {
  const World world = hsdp_world();
  TimingOptions options;
  options.program = hsdp(4);
  const plan::Plan plan = plan::plan_data_parallel(world.graph, 8, 8);
  const StepTasks step = plan_step_tasks(plan, world.context(), options);
  const double bucket = 272 * 4;  // fp32 gradients
  const std::vector<int> shard = {0, 1, 2, 3}, replicas = {0, 4};
  const double expected = world.network.reduce_scatter(shard, Bytes(bucket)).s() +
                          world.network.allreduce(replicas, Bytes(bucket / 4)).s();
  int found = 0;
  for (const Task& task : step.tasks) {
    if (task.work != TaskWork::ReduceScatter) continue;
    ++found;
    EXPECT_DOUBLE_EQ(task.duration_s, expected);
  }
  EXPECT_EQ(found, 1);  // one task stands for both shard groups' identical reductions
  // Each gather moves the whole weights over 4 ranks, not 8.
  for (const Task& task : step.tasks) {
    if (task.work == TaskWork::AllGather) {
      EXPECT_DOUBLE_EQ(task.duration_s, world.network.reduce_scatter(shard, Bytes(bucket)).s());
    }
  }
}

TEST(Hsdp, EachRankHoldsItsShardGroupsShareOfTheState) {
  const World world = hsdp_world();
  const plan::Plan plan = plan::plan_data_parallel(world.graph, 8, 8);
  const auto state = [&](int shard) {
    const auto memory = program::plan_memory(plan, world.graph, cost::Optimizer::Adam, hsdp(shard));
    return memory.front().use.optimizer_state.value();
  };
  // Adam's fp32 state of 272 parameters (8 bytes each), over 4 ranks, not 8.
  EXPECT_DOUBLE_EQ(state(4), 272 * 8 / 4.0);
  EXPECT_DOUBLE_EQ(state(0), 272 * 8 / 8.0);
}

TEST(Hsdp, RefusesAShardThatDoesNotDivideTheGroup) {
  const World world = hsdp_world();
  const plan::Plan plan = plan::plan_data_parallel(world.graph, 6, 6);
  EXPECT_THROW(program::build_step_program(world.graph, plan, hsdp(4)), UserError);
  program::ProgramOptions zero2 = hsdp(4);
  zero2.zero_stage = 2;
  EXPECT_THROW(program::check_program_options(zero2), UserError);
}

}  // namespace
}  // namespace burst::timing
