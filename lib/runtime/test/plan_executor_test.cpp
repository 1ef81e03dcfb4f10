// PlanExecutor in one process: ranks are threads over InProcessWorld (no sockets, no
// spawned workers). A tiny model with dropout, trained for a few SGD steps, must give the
// one-rank parameters under uneven and burst-style plans (docs/architecture.md, invariant
// 1); a peer that never answers must end the step with a RunFailure naming it; step times
// must be classified as StepTimes says; and the executor must issue its messages and
// all-reduces in the order of its step program.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <map>
#include <thread>

#include "burst/graph/builder.h"
#include "burst/plan/plan.h"
#include "burst/program/step_program.h"
#include "burst/runtime/plan_executor.h"
#include "burst/util/error.h"
#include "hand_plan.h"
#include "in_process_communicator.h"
#include "threaded_training.h"

namespace burst::runtime {
namespace {

using plan::testing::hand_plan;
using plan::testing::shard;
using testing::InProcessWorld;

constexpr int64_t kBatch = 8;

// input [6] -> fc1 (8) -> relu -> dropout 0.5 -> fc2 (3) -> loss: layers 0..5.
graph::Graph tiny_model() {
  graph::GraphBuilder b("tiny");
  auto x = b.input("input", {6});
  x = b.linear("fc1", x, 8);
  x = b.relu("relu", x);
  x = b.dropout("drop", x, 0.5);
  x = b.linear("fc2", x, 3);
  b.cross_entropy("loss", x);
  return std::move(b).build();
}

// A fixed batch per step: features [kBatch, 6] and labels [kBatch] drawn from the step.
BatchSource batch_of(int64_t step) {
  torch::manual_seed(static_cast<uint64_t>(100 + step));
  const torch::Tensor features = torch::randn({kBatch, 6});
  const torch::Tensor labels = torch::randint(3, {kBatch}, torch::kInt64);
  BatchSource source;
  source.features = [features](graph::LayerId, int64_t begin, int64_t end) { return features.slice(0, begin, end); };
  source.labels = [labels](graph::LayerId, int64_t begin, int64_t end) { return labels.slice(0, begin, end); };
  return source;
}

ExecutorOptions sgd_options() { return testing::sgd_with_momentum(7, 0.1); }

using testing::largest_relative_error;
using testing::Parameters;

std::pair<Parameters, std::vector<StepResult>> train(const graph::Graph& graph, const plan::Plan& plan, int steps,
                                                     InProcessWorld& world, const ExecutorOptions& options = sgd_options(),
                                                     bool report_loss = true, bool gather = true) {
  return testing::train_threads(graph, plan, steps, world, options, batch_of, report_loss, gather);
}

class PlanExecutorTest : public ::testing::Test {
 protected:
  const graph::Graph graph = tiny_model();
  Parameters one_rank(int steps) {
    InProcessWorld world(1, std::chrono::seconds(10));
    return train(graph, plan::plan_data_parallel(graph, 1, kBatch), steps, world).first;
  }
};

TEST_F(PlanExecutorTest, UnevenDataParallelEqualsOneRankWithDropout) {
  // Samples 3/1/4 of 8 on three ranks, every layer: the gradients summed over the ranks are
  // the one-rank gradients, and sample i's dropout mask is the same on whichever rank.
  const std::vector<cost::Shard> uneven{shard(0, 0, 3), shard(1, 3, 4), shard(2, 4, 8)};
  InProcessWorld world(3, std::chrono::seconds(10));
  const auto [parameters, results] = train(graph, hand_plan(graph, 3, kBatch, std::vector(6, uneven)), 4, world);
  EXPECT_LT(largest_relative_error(one_rank(4), parameters), 1e-6);
}

TEST_F(PlanExecutorTest, BurstPlanWithReshardsEqualsOneRank) {
  // fc1 and relu on ranks 0-1 (4 + 4), dropout and fc2 on rank 2 alone, the loss on all
  // three (3/3/2): every boundary re-shards, forward and backward.
  const std::vector<cost::Shard> two{shard(0, 0, 4), shard(1, 4, 8)};
  const std::vector<cost::Shard> alone{shard(2, 0, 8)};
  const std::vector<cost::Shard> three{shard(0, 0, 3), shard(1, 3, 6), shard(2, 6, 8)};
  const plan::Plan burst = hand_plan(graph, 3, kBatch, {two, two, two, alone, alone, three});
  InProcessWorld world(3, std::chrono::seconds(10));
  const auto [parameters, results] = train(graph, burst, 4, world);
  EXPECT_LT(largest_relative_error(one_rank(4), parameters), 1e-6);
  // Every rank reports the same loss: the global batch's.
  EXPECT_DOUBLE_EQ(results[0].loss, results[1].loss);
  EXPECT_DOUBLE_EQ(results[0].loss, results[2].loss);
}

// A pipeline of the tiny model: stage 0 (input, fc1, relu) data parallel on ranks 0-1,
// stage 1 (dropout, fc2, loss) on rank 2 (or ranks 2-3, split 1 + 1), 4 micro-batches of 2.
plan::Plan tiny_pipeline(const graph::Graph& graph, plan::Schedule schedule, bool wide_second_stage) {
  const std::vector<cost::Shard> first{shard(0, 0, 1), shard(1, 1, 2)};
  const std::vector<cost::Shard> second = wide_second_stage ? std::vector<cost::Shard>{shard(2, 0, 1), shard(3, 1, 2)}
                                                            : std::vector<cost::Shard>{shard(2, 0, 2)};
  plan::Plan plan = hand_plan(graph, wide_second_stage ? 4 : 3, kBatch, {first, first, first, second, second, second});
  plan.pipeline.micro_batches = 4;
  plan.pipeline.schedule = schedule;
  plan.pipeline.stage_starts = {3};
  return plan;
}

TEST_F(PlanExecutorTest, PipelinePlansEqualOneRankUnderBothSchedules) {
  // Each micro-batch's gradients add up to the whole batch's (the loss is divided by the
  // global batch), and sample i's dropout mask is drawn by its global index whichever
  // micro-batch carries it.
  const Parameters expected = one_rank(4);
  for (const plan::Schedule schedule : {plan::Schedule::GPipe, plan::Schedule::OneFOneB}) {
    for (const bool wide : {false, true}) {
      const plan::Plan pipeline = tiny_pipeline(graph, schedule, wide);
      InProcessWorld world(pipeline.devices, std::chrono::seconds(10));
      const auto [parameters, results] = train(graph, pipeline, 4, world);
      EXPECT_LT(largest_relative_error(expected, parameters), 1e-6) << plan::schedule_name(schedule) << " " << wide;
      EXPECT_DOUBLE_EQ(results[0].loss, results[2].loss);
    }
  }
}

TEST_F(PlanExecutorTest, BurstPlacementsInsideStagesEqualOneRank) {
  // Stage 0 on ranks 0-1: input and fc1 split 1 + 1, relu on rank 1 alone; stage 1 on ranks
  // 2-3: dropout and fc2 on rank 3 alone, the loss split 1 + 1. 4 micro-batches of 2, 1F1B.
  const std::vector<cost::Shard> first{shard(0, 0, 1), shard(1, 1, 2)};
  const std::vector<cost::Shard> second{shard(2, 0, 1), shard(3, 1, 2)};
  plan::Plan hybrid = hand_plan(graph, 4, kBatch,
                                {first, first, {shard(1, 0, 2)}, {shard(3, 0, 2)}, {shard(3, 0, 2)}, second});
  hybrid.pipeline.micro_batches = 4;
  hybrid.pipeline.schedule = plan::Schedule::OneFOneB;
  hybrid.pipeline.stage_starts = {3};
  InProcessWorld world(4, std::chrono::seconds(10));
  EXPECT_LT(largest_relative_error(one_rank(4), train(graph, hybrid, 4, world).first), 1e-6);
}

TEST_F(PlanExecutorTest, MicroBatchesWithoutStagesAccumulateGradients) {
  // Data parallelism on 2 ranks, 2 micro-batches of 4 (2 + 2): gradient accumulation.
  plan::Plan accumulate = hand_plan(graph, 2, kBatch, std::vector(6, std::vector{shard(0, 0, 2), shard(1, 2, 4)}));
  accumulate.pipeline.micro_batches = 2;
  InProcessWorld world(2, std::chrono::seconds(10));
  EXPECT_LT(largest_relative_error(one_rank(4), train(graph, accumulate, 4, world).first), 1e-6);
}

TEST_F(PlanExecutorTest, APeerThatNeverAnswersEndsTheStepWithARunFailureNamingIt) {
  // Rank 1 holds fc1 and relu alone; rank 0 waits for relu's output from it, and rank 1
  // never runs. The wait times out and the error names what it waited for and the peer.
  const std::vector<cost::Shard> zero{shard(0, 0, 8)};
  const std::vector<cost::Shard> one{shard(1, 0, 8)};
  const plan::Plan plan = hand_plan(graph, 2, kBatch, {zero, one, one, zero, zero, zero});
  InProcessWorld world(2, std::chrono::milliseconds(200));
  torch::manual_seed(0);
  PlanExecutor rank0(graph, plan, world.rank(0), sgd_options());
  PlanExecutor rank1(graph, plan, world.rank(1), sgd_options());  // built, never stepped
  try {
    rank0.step(batch_of(0), 0, false);
    FAIL() << "the step returned without its input";
  } catch (const RunFailure& failure) {
    const std::string text = failure.what();
    EXPECT_NE(text.find("recv input drop (relu -> drop) from r1"), std::string::npos) << text;
    EXPECT_NE(text.find("Timed out"), std::string::npos) << text;
  }
}

TEST_F(PlanExecutorTest, APeerThatStopsAfterAStepEndsTheStepTimesGatherWithARunFailure) {
  // Both ranks run a step; rank 1 then never joins the step times all-reduce (a worker
  // stopped between steps). Rank 0's wait times out as a RunFailure naming the all-reduce,
  // not as an internal error.
  const plan::Plan plan = plan::plan_data_parallel(graph, 2, kBatch);
  InProcessWorld world(2, std::chrono::milliseconds(200));
  torch::manual_seed(0);
  PlanExecutor rank0(graph, plan, world.rank(0), sgd_options());
  PlanExecutor rank1(graph, plan, world.rank(1), sgd_options());
  const BatchSource batch = batch_of(0);
  std::thread other([&] { rank1.step(batch, 0, false); });
  rank0.step(batch, 0, false);
  other.join();
  try {
    rank0.gather_step_times(StepTimes{});
    FAIL() << "the gather returned without rank 1";
  } catch (const RunFailure& failure) {
    const std::string text = failure.what();
    EXPECT_NE(text.find("the step times all-reduce"), std::string::npos) << text;
    EXPECT_NE(text.find("Timed out"), std::string::npos) << text;
  }
}

TEST_F(PlanExecutorTest, StepTimesAreClassifiedAsDocumented) {
  // Data parallel on two ranks, loss not reported: no rank ever waits for a layer it does
  // not run, so nothing is idle; the bucket all-reduce is communication.
  {
    InProcessWorld world(2, std::chrono::seconds(10));
    const auto results = train(graph, plan::plan_data_parallel(graph, 2, kBatch), 1, world, sgd_options(), false).second;
    for (const StepResult& r : results) {
      EXPECT_EQ(r.times.idle_ms, 0);
      EXPECT_GT(r.times.communication_ms, 0);
      EXPECT_NEAR(r.times.compute_ms + r.times.communication_ms + r.times.idle_ms, r.times.total_ms, 1e-9);
    }
  }
  // Every layer on rank 0: rank 1 only joins the loss all-reduce, which is idle, and it has
  // nothing that counts as communication.
  {
    InProcessWorld world(2, std::chrono::seconds(10));
    const plan::Plan all_on_zero = hand_plan(graph, 2, kBatch, std::vector(6, std::vector{shard(0, 0, 8)}));
    const auto results = train(graph, all_on_zero, 1, world).second;
    EXPECT_EQ(results[1].times.communication_ms, 0);
    EXPECT_GT(results[1].times.idle_ms, 0);  // the loss all-reduce's wait, however short
    EXPECT_DOUBLE_EQ(results[0].loss, results[1].loss);
  }
}

// The messages and all-reduces a program says rank `rank` issues, in its op order.
std::vector<std::string> expected_issues(const program::StepProgram& program, int rank, bool messages) {
  std::vector<std::string> issues;
  for (const program::Op& op : program.ops[static_cast<size_t>(rank)]) {
    const bool message = op.kind == program::OpKind::RecvActivation || op.kind == program::OpKind::SendActivation ||
                         op.kind == program::OpKind::RecvGradient || op.kind == program::OpKind::SendGradient;
    if (message && messages) {
      const program::Piece& p = program.pieces[static_cast<size_t>(op.piece)];
      if (p.local()) continue;
      const bool send = p.sender == rank;
      issues.push_back(fmt::format("{} {} tag {}", send ? "send" : "recv", send ? p.receiver : p.sender, p.tag));
    } else if (!messages && op.kind == program::OpKind::AllReduce) {
      const auto& group = program.groups[static_cast<size_t>(program.buckets[static_cast<size_t>(op.bucket)].group)];
      issues.push_back(fmt::format("allreduce {}", fmt::join(group, ",")));
    } else if (!messages && op.kind == program::OpKind::ReduceLoss) {
      issues.push_back("allreduce world");
    }
  }
  return issues;
}

TEST_F(PlanExecutorTest, IssuesMessagesAndAllReducesInProgramOrder) {
  // The burst plan above on 3 ranks, with a bucket cap small enough for one bucket per
  // layer: each rank's sends and receives come in its program's order (tags and peers),
  // and so do its all-reduces (a bucket may start early, from its gradient hooks, but never
  // out of order).
  const std::vector<cost::Shard> two{shard(0, 0, 4), shard(1, 4, 8)};
  const std::vector<cost::Shard> alone{shard(2, 0, 8)};
  const std::vector<cost::Shard> three{shard(0, 0, 3), shard(1, 3, 6), shard(2, 6, 8)};
  const plan::Plan burst = hand_plan(graph, 3, kBatch, {two, two, two, alone, alone, three});
  program::ProgramOptions options;
  options.bucket_bytes = 64;
  const program::StepProgram program = program::build_step_program(graph, burst, options);
  InProcessWorld world(3, std::chrono::seconds(10));
  ExecutorOptions executor_options = sgd_options();
  executor_options.program.bucket_bytes = 64;
  train(graph, burst, 1, world, executor_options, true, /*gather=*/false);
  for (int r = 0; r < 3; ++r) {
    std::vector<std::string> messages, reductions;
    for (const std::string& issue : world.issued(r)) (issue.rfind("allreduce", 0) == 0 ? reductions : messages).push_back(issue);
    EXPECT_EQ(messages, expected_issues(program, r, true)) << "rank " << r;
    EXPECT_EQ(reductions, expected_issues(program, r, false)) << "rank " << r;
  }
}

}  // namespace
}  // namespace burst::runtime
