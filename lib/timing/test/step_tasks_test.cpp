// The step program's lowering to tasks, on programs small enough to list every task and
// dependency by hand (in the comments).
#include "burst/timing/step_tasks.h"
#include "burst/timing/evaluate.h"

#include <algorithm>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "burst/cluster/cluster.h"
#include "burst/cost/device_models.h"
#include "burst/cost/memory.h"
#include "burst/graph/builder.h"
#include "burst/graph/model_json.h"
#include "hand_plan.h"
#include "test_world.h"

namespace burst::timing {
namespace {

using plan::Plan;
using plan::plan_data_parallel;

using plan::testing::ms;
using plan::testing::test_cluster;
using plan::testing::World;

using plan::testing::hand_plan;
using plan::testing::shard;

// The index of the one task doing `work` for `layer` on `rank` (Message: `rank` is the sender).
int32_t find_task(const StepTasks& step, TaskWork work, int32_t layer, int32_t rank) {
  int32_t found = -1;
  for (size_t t = 0; t < step.tasks.size(); ++t) {
    const Task& task = step.tasks[t];
    if (task.work == work && task.layer == layer && task.rank == rank) {
      EXPECT_EQ(found, -1) << "two tasks match";
      found = static_cast<int32_t>(t);
    }
  }
  EXPECT_GE(found, 0) << "no task matches";
  return found;
}

// Task `after`'s dependencies.
std::set<int32_t> dependencies(const StepTasks& step, int32_t after) {
  std::set<int32_t> before;
  for (size_t t = 0; t < step.tasks.size(); ++t) {
    for (int32_t k = step.successor_begin[t]; k < step.successor_begin[t + 1]; ++k) {
      if (step.successors[static_cast<size_t>(k)] == after) before.insert(static_cast<int32_t>(t));
    }
  }
  EXPECT_EQ(before.size(), static_cast<size_t>(step.dependency_count[static_cast<size_t>(after)]));
  return before;
}

// input [250] (1000 B a sample) -> a (relu) -> b (relu), batch 2 on 2 ranks, 1 MB/s links:
// input on r0, a split r0 [0,1) and r1 [1,2), b on r0. Costs: a 2 ms forward and 3 ms
// backward per sample, b 1 ms per sample both ways, plus a 0.5 ms shard overhead.
// Programs (step_program_test): r0 F input, SEND_F, COPY_F, F a, COPY_F, RECV_F, F b, B b,
// SEND_B, COPY_B, B a, B input, WAIT_SENDS; r1 RECV_F, F a, SEND_F, RECV_B, B a.
// Tasks: 6 shards on r0, 2 on r1, 3 messages of 1000 B (1 ms each), the step's end: 12.
//   F a on r1 waits for input->a; F b on r0 for its F a and a->b (sent after r1's F a);
//   B a on r1 for b's gradient (sent after r0's B b). The end waits for r0's B input, r1's
//   B a and the three messages.
TEST(StepTiming, ThreeLayerChainLowersToShardsAndMessages) {
  graph::GraphBuilder b("chain3");
  b.relu("b", b.relu("a", b.input("input", {250})));
  const World world(std::move(b).build(), test_cluster(2, 1e6, 0),
                    {{"input", {ms(0), ms(0)}}, {"a", {ms(0, 2), ms(0, 3)}}, {"b", {ms(0, 1), ms(0, 1)}}});
  const Plan plan = hand_plan(world.graph, 2, 2, {{shard(0, 0, 2)}, {shard(0, 0, 1), shard(1, 1, 2)}, {shard(0, 0, 2)}});
  TimingOptions options;
  options.shard_overhead = Seconds::from_ms(0.5);
  const StepTasks step = plan_step_tasks(plan, world.context(), options);

  ASSERT_EQ(step.tasks.size(), 12u);
  EXPECT_EQ(step.tasks[static_cast<size_t>(step.step_end)].kind, TaskKind::StepEnd);
  const int32_t input_to_a = find_task(step, TaskWork::Message, 1, 0);
  const int32_t a_to_b = find_task(step, TaskWork::Message, 2, 1);
  const int32_t b_gradient = find_task(step, TaskWork::Message, 2, 0);
  for (const int32_t message : {input_to_a, a_to_b, b_gradient}) {
    EXPECT_NEAR(step.tasks[static_cast<size_t>(message)].duration_s, 1e-3, 1e-15);
    EXPECT_EQ(step.tasks[static_cast<size_t>(message)].bytes, 1000);
  }
  const int32_t a_forward_r0 = find_task(step, TaskWork::Forward, 1, 0);
  const int32_t a_forward_r1 = find_task(step, TaskWork::Forward, 1, 1);
  const int32_t b_forward = find_task(step, TaskWork::Forward, 2, 0);
  const int32_t b_backward = find_task(step, TaskWork::Backward, 2, 0);
  const int32_t a_backward_r1 = find_task(step, TaskWork::Backward, 1, 1);
  EXPECT_NEAR(step.tasks[static_cast<size_t>(a_forward_r1)].duration_s, 2.5e-3, 1e-15);  // 2 ms + overhead
  EXPECT_NEAR(step.tasks[static_cast<size_t>(b_forward)].duration_s, 2.5e-3, 1e-15);     // 2 samples x 1 ms + overhead
  EXPECT_EQ(dependencies(step, a_forward_r1), (std::set<int32_t>{input_to_a}));
  EXPECT_EQ(dependencies(step, a_to_b), (std::set<int32_t>{a_forward_r1}));
  EXPECT_EQ(dependencies(step, b_forward), (std::set<int32_t>{a_forward_r0, a_to_b}));
  EXPECT_EQ(dependencies(step, b_gradient), (std::set<int32_t>{b_backward}));
  EXPECT_EQ(dependencies(step, a_backward_r1), (std::set<int32_t>{a_forward_r1, b_gradient}));
  EXPECT_EQ(dependencies(step, step.step_end),
            (std::set<int32_t>{find_task(step, TaskWork::Backward, 0, 0), a_backward_r1, input_to_a, a_to_b, b_gradient}));
  EXPECT_EQ(step.first_compute[0], find_task(step, TaskWork::Forward, 0, 0));
  EXPECT_EQ(step.first_compute[1], a_forward_r1);
}

// Data parallelism on 2 ranks: input [4] -> l1 (linear 4 -> 4, 80 B of gradients) -> l2
// (linear, 80 B); updates 1 ms each. Buckets of at most 80 B: l2's, then l1's. Each bucket's
// all-reduce waits for both ranks' backward of its layer, l1's also for l2's (a rank's
// collectives in program order); it holds no compute up: l1's backward follows l2's at once.
// Each rank's UPDATE (1 + 1 ms, no shard overhead) waits for both all-reduces and its last
// shard (the input's backward).
TEST(StepTiming, BucketsChainAndGateTheUpdate) {
  graph::GraphBuilder b("chain");
  b.linear("l2", b.linear("l1", b.input("input", {4}), 4), 4);
  const World world(std::move(b).build(), test_cluster(2, 80, 0),
                    {{"input", {ms(0), ms(0)}}, {"l1", {ms(1), ms(2)}}, {"l2", {ms(1), ms(2)}}},
                    {{"l1", Seconds::from_ms(1)}, {"l2", Seconds::from_ms(1)}});
  TimingOptions options;
  options.program.bucket_bytes = 80;
  options.shard_overhead = Seconds::from_ms(0.5);
  const StepTasks step = plan_step_tasks(plan_data_parallel(world.graph, 2, 2), world.context(), options);

  const int32_t l2_bucket = find_task(step, TaskWork::Allreduce, 2, -1);
  const int32_t l1_bucket = find_task(step, TaskWork::Allreduce, 1, -1);
  EXPECT_EQ(step.groups, (std::vector<std::vector<int>>{{0, 1}}));
  EXPECT_NEAR(step.tasks[static_cast<size_t>(l2_bucket)].duration_s, 1.0, 1e-12);  // 2 x 1/2 x 80 B / 80 B/s
  EXPECT_EQ(dependencies(step, l2_bucket),
            (std::set<int32_t>{find_task(step, TaskWork::Backward, 2, 0), find_task(step, TaskWork::Backward, 2, 1)}));
  EXPECT_EQ(dependencies(step, l1_bucket), (std::set<int32_t>{find_task(step, TaskWork::Backward, 1, 0),
                                                              find_task(step, TaskWork::Backward, 1, 1), l2_bucket}));
  EXPECT_EQ(dependencies(step, find_task(step, TaskWork::Backward, 1, 0)),
            (std::set<int32_t>{find_task(step, TaskWork::Backward, 2, 0)}));
  for (const int rank : {0, 1}) {
    const int32_t update = find_task(step, TaskWork::Update, -1, rank);
    EXPECT_NEAR(step.tasks[static_cast<size_t>(update)].duration_s, 2e-3, 1e-15);
    EXPECT_EQ(dependencies(step, update),
              (std::set<int32_t>{find_task(step, TaskWork::Backward, 0, rank), l2_bucket, l1_bucket}));
  }
}

// The same with clipping: the gradient norm's world sum (8 bytes: 2 x 1/2 x 8 B / 80 B/s =
// 0.1 s) follows each rank's last bucket all-reduce, and the update waits for it; the step
// grows by its 0.1 s.
TEST(StepTiming, ClippingsNormSumGatesTheUpdate) {
  graph::GraphBuilder b("chain");
  b.linear("l2", b.linear("l1", b.input("input", {4}), 4), 4);
  const World world(std::move(b).build(), test_cluster(2, 80, 0),
                    {{"input", {ms(0), ms(0)}}, {"l1", {ms(1), ms(2)}}, {"l2", {ms(1), ms(2)}}},
                    {{"l1", Seconds::from_ms(1)}, {"l2", Seconds::from_ms(1)}});
  TimingOptions clipping;
  clipping.program.bucket_bytes = 80;
  clipping.program.clip_grad_norm = 1;
  const Plan plan = plan_data_parallel(world.graph, 2, 2);
  const StepTasks step = plan_step_tasks(plan, world.context(), clipping);
  const int32_t norm = find_task(step, TaskWork::GradNorm, -1, -1);
  EXPECT_NEAR(step.tasks[static_cast<size_t>(norm)].duration_s, 0.1, 1e-12);
  EXPECT_EQ(dependencies(step, norm), (std::set<int32_t>{find_task(step, TaskWork::Backward, 0, 0),
                                                         find_task(step, TaskWork::Backward, 0, 1),
                                                         find_task(step, TaskWork::Allreduce, 1, -1)}));
  for (const int rank : {0, 1}) {
    EXPECT_EQ(dependencies(step, find_task(step, TaskWork::Update, -1, rank)).count(norm), 1u) << rank;
  }
  EvaluateOptions evaluate;
  evaluate.program.bucket_bytes = 80;
  const double without = evaluate_plan(plan, world.context(), evaluate).iteration_time.s();
  evaluate.program = clipping.program;
  const double with = evaluate_plan(plan, world.context(), evaluate).iteration_time.s();
  EXPECT_NEAR(with - without, 0.1, 1e-9);
}

// The chain above with l1 a 2-way column split and l2 a 2-way row split on both ranks, at
// batch 2 (both hold both samples): each rank updates its parts' parameters only. l1 (4 ->
// 4, 20 parameters) keeps 10 (half its weight and bias), l2 keeps 12 (half its weight, all
// its bias): 1 ms x 10/20 + 1 ms x 12/20 = 1.1 ms a rank, where whole layers take 2 ms.
TEST(StepTiming, APartOfADividedTensorSplitUpdatesItsShareOfTheWeights) {
  graph::GraphBuilder b("chain");
  b.linear("l2", b.linear("l1", b.input("input", {4}), 4), 4);
  World world(std::move(b).build(), test_cluster(2, 80, 0),
              {{"input", {ms(0), ms(0)}}, {"l1", {ms(1), ms(2)}}, {"l2", {ms(1), ms(2)}}},
              {{"l1", Seconds::from_ms(1)}, {"l2", Seconds::from_ms(1)}});
  world.cost.with_tensor("l1", 2, {ms(1), ms(1)}).with_tensor("l2", 2, {ms(1), ms(1)});
  Plan plan = plan_data_parallel(world.graph, 2, 2);
  plan::testing::place_split(plan, "l1", cost::SplitKind::Column, {0, 1}, 2);
  plan::testing::place_split(plan, "l2", cost::SplitKind::Row, {0, 1}, 2);
  const StepTasks step = plan_step_tasks(plan, world.context(), TimingOptions{});
  for (const int rank : {0, 1}) {
    const int32_t update = find_task(step, TaskWork::Update, -1, rank);
    EXPECT_NEAR(step.tasks[static_cast<size_t>(update)].duration_s, 1.1e-3, 1e-15) << "rank " << rank;
  }
}

// 4 ranks, batch 4: input [4] on r0 [0,2), r2 [2,3), r3 [3,4); l1 and l2 (linear 4 -> 4)
// on every rank, one sample each. The one message is input -> l1, r0 -> r1 (no gradient
// into the input), so no port carries two. r2 and r3 hold one sample in both segments and
// exchange nothing: one class, lowered once (r2 stands for r3). r0 and r1 exchange the
// message: each is lowered.
World classes_world() {
  graph::GraphBuilder b("classes");
  b.linear("l2", b.linear("l1", b.input("input", {4}), 4), 4);
  return World(std::move(b).build(), test_cluster(4, 1e6, 1e-5),
               {{"input", {ms(0), ms(0)}}, {"l1", {ms(1, 1), ms(2, 1)}}, {"l2", {ms(1, 1), ms(2, 1)}}},
               {{"l1", Seconds::from_ms(1)}, {"l2", Seconds::from_ms(1)}});
}
Plan classes_plan(const World& world) {
  const std::vector<cost::Shard> each{shard(0, 0, 1), shard(1, 1, 2), shard(2, 2, 3), shard(3, 3, 4)};
  return hand_plan(world.graph, 4, 4, {{shard(0, 0, 2), shard(2, 2, 3), shard(3, 3, 4)}, each, each});
}

TEST(StepTiming, RanksThatTimeTheSameAreLoweredOnce) {
  const World world = classes_world();
  const Plan plan = classes_plan(world);
  program::BuildScope per_class;
  per_class.one_rank_per_class = true;
  const StepTasks step = plan_step_tasks(plan, world.context(), TimingOptions{}, per_class);
  EXPECT_EQ(step.representative, (std::vector<int32_t>{0, 1, 2, 2}));
  EXPECT_EQ(step.class_size, (std::vector<int32_t>{1, 1, 2, 0}));
  EXPECT_EQ(step.first_compute[3], -1);
  for (const Task& task : step.tasks) EXPECT_NE(task.rank, 3);

  const StepTasks every = plan_step_tasks(plan, world.context(), TimingOptions{});
  EXPECT_EQ(every.representative, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(every.class_size, (std::vector<int32_t>{1, 1, 1, 1}));
  program::BuildScope quiet;
  quiet.reduce_loss = false;
  EXPECT_FALSE(ports_may_contend(program::build_step_program(world.graph, plan, {}, quiet)));
}

void expect_same_evaluation(const PlanEvaluation& one_per_class, const PlanEvaluation& every_rank,
                            const std::string& what) {
  SCOPED_TRACE(what);
  const double step = every_rank.iteration_time.s();
  EXPECT_EQ(one_per_class.iteration_time.s(), step);
  EXPECT_NEAR(one_per_class.device_seconds.s(), every_rank.device_seconds.s(), 1e-12 * every_rank.device_seconds.s());
  EXPECT_NEAR(one_per_class.idle_device_seconds.s(), every_rank.idle_device_seconds.s(), 1e-12 * step);
  ASSERT_EQ(one_per_class.layers.size(), every_rank.layers.size());
  for (size_t id = 0; id < every_rank.layers.size(); ++id) {
    const LayerTiming& a = one_per_class.layers[id];
    const LayerTiming& b = every_rank.layers[id];
    EXPECT_EQ(a.forward.s(), b.forward.s()) << id;
    EXPECT_EQ(a.backward.s(), b.backward.s()) << id;
    EXPECT_EQ(a.transfer.s(), b.transfer.s()) << id;
    EXPECT_EQ(a.sync.s(), b.sync.s()) << id;
    EXPECT_EQ(a.forward_end_s, b.forward_end_s) << id;
    EXPECT_EQ(a.backward_start_s, b.backward_start_s) << id;
    EXPECT_EQ(a.sync_end_s, b.sync_end_s) << id;
  }
  ASSERT_EQ(one_per_class.timelines.size(), every_rank.timelines.size());
  for (size_t rank = 0; rank < every_rank.timelines.size(); ++rank) {
    const auto& a = one_per_class.timelines[rank];
    const auto& b = every_rank.timelines[rank];
    ASSERT_EQ(a.size(), b.size()) << "rank " << rank;
    for (size_t i = 0; i < b.size(); ++i) {
      EXPECT_EQ(a[i].start_s, b[i].start_s) << "rank " << rank << " activity " << i;
      EXPECT_EQ(a[i].end_s, b[i].end_s) << "rank " << rank << " activity " << i;
      EXPECT_EQ(a[i].kind, b[i].kind) << "rank " << rank << " activity " << i;
      EXPECT_EQ(a[i].layer, b[i].layer) << "rank " << rank << " activity " << i;
    }
  }
}

// Timing one rank per class gives exactly what timing every rank gives: on the hand-made
// classes above, and on data parallelism with even and uneven splits, ranks without
// samples, and synchronised BatchNorm (every rank in every statistics all-reduce).
TEST(StepTiming, OneRankPerClassTimesAsEveryRank) {
  auto both = [](const Plan& plan, const PlanContext& context, bool sync_batchnorm, const std::string& what) {
    EvaluateOptions options;
    options.timelines = true;
    options.program.sync_batchnorm = sync_batchnorm;
    const PlanEvaluation one_per_class = evaluate_plan(plan, context, options);
    options.time_each_rank = true;
    expect_same_evaluation(one_per_class, evaluate_plan(plan, context, options), what);
  };
  const World world = classes_world();
  both(classes_plan(world), world.context(), true, "hand-made classes");

  const auto cost = cost::make_cost_model(cost::resolve_device("a100", std::nullopt));
  const graph::Graph resnet = graph::load_model("resnet50");
  const cost::NetworkModel network(cluster::builtin_cluster("a100", 16));
  const PlanContext context{resnet, *cost, network};
  for (const int64_t batch : {64, 100, 12}) {  // 4 each; 7 on ranks 0-3 and 6 on the rest; 12 ranks of 16
    for (const bool sync : {true, false}) {
      both(plan_data_parallel(resnet, 16, batch), context, sync, fmt::format("resnet50 dp batch {} sync {}", batch, sync));
    }
  }
}

// MFU counts 3 forward passes of the batch; HFU adds what recomputation runs again. Tiny
// GPT-2 at batch 8, 1 s, 2 devices of 1 TFLOP/s: MFU = 3F x 8 / 2e12 with F the graph's
// forward FLOPs per sample; full recomputation adds F (HFU = 4/3 MFU); selective adds each
// attention layer's core share of its forward FLOPs.
TEST(Utilisation, ModelAndHardwareFlops) {
  const graph::Graph gpt2 = graph::load_model("gpt2:layers=2,width=64,heads=4,seq=16,vocab=64");
  const auto forward = static_cast<double>(gpt2.total_forward_flops());
  const double mfu = model_flops_utilisation(gpt2, 8, Seconds(1.0), 2, 1e12);
  EXPECT_DOUBLE_EQ(mfu, 3 * forward * 8 / 2e12);
  EXPECT_DOUBLE_EQ(hardware_flops_utilisation(gpt2, 8, Seconds(1.0), 2, 1e12, cost::Recompute::None), mfu);
  EXPECT_DOUBLE_EQ(hardware_flops_utilisation(gpt2, 8, Seconds(1.0), 2, 1e12, cost::Recompute::Full), mfu * 4 / 3);
  double cores = 0;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(gpt2.size()); ++id) {
    if (gpt2.layer(id).op() != graph::OpKind::SelfAttention) continue;
    cores += static_cast<double>(gpt2.info(id).forward_flops) * cost::attention_core_forward_share(gpt2, id);
  }
  EXPECT_GT(cores, 0);
  EXPECT_DOUBLE_EQ(hardware_flops_utilisation(gpt2, 8, Seconds(1.0), 2, 1e12, cost::Recompute::Selective),
                   (3 * forward + cores) * 8 / 2e12);
  EXPECT_EQ(model_flops_utilisation(gpt2, 8, Seconds(0.0), 2, 1e12), 0);
}

}  // namespace
}  // namespace burst::timing
