#include "burst/plan/plan.h"

#include <gtest/gtest.h>

#include "burst/graph/zoo.h"
#include "burst/util/error.h"

namespace burst::plan {
namespace {

using cost::Shard;

TEST(EvenSplit, FirstRanksTakeTheRemainder) {
  // 16 samples on 3 ranks: 16 = 6 + 5 + 5.
  const auto shards = even_split({0, 1, 2}, 16);
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards[0].samples, (cost::SampleRange{0, 6}));
  EXPECT_EQ(shards[1].samples, (cost::SampleRange{6, 11}));
  EXPECT_EQ(shards[2].samples, (cost::SampleRange{11, 16}));
}

TEST(DataParallel, EveryLayerOnAllDevicesUpToTheBatch) {
  const graph::Graph graph = graph::build_zoo_model("fmnist_cnn");
  const Plan plan = plan_data_parallel(graph, 4, 10);
  ASSERT_EQ(plan.layers.size(), graph.size());
  // 10 samples on 4 ranks: 3 + 3 + 2 + 2.
  EXPECT_EQ(plan.layers[0].shards.size(), 4u);
  EXPECT_EQ(plan.layers[0].shards[3].samples, (cost::SampleRange{8, 10}));
  validate_plan(plan, graph, cluster::builtin_cluster("cpu", 4));
  // 8 devices for 3 samples: 3 ranks work, 5 stay idle.
  EXPECT_EQ(plan_data_parallel(graph, 8, 3).layers[0].shards.size(), 3u);
  // conv1 has weights: its sync group is every rank; relu1 has none.
  EXPECT_EQ(sync_group(plan, graph, *graph.find("conv1")), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(sync_group(plan, graph, *graph.find("relu1")).empty());
  // Same placement on both sides: every transfer is local.
  for (const auto& transfer : activation_transfers(plan, 0, 1)) EXPECT_TRUE(transfer.local());
}

std::string validation_error(Plan plan, const graph::Graph& graph, int devices) {
  try {
    validate_plan(plan, graph, cluster::builtin_cluster("cpu", devices));
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(ValidatePlan, NamesTheLayerAndTheProblem) {
  const graph::Graph graph = graph::build_zoo_model("fmnist_cnn");
  const Plan good = plan_data_parallel(graph, 3, 16);
  EXPECT_EQ(validation_error(good, graph, 3), "(no error)");

  Plan uncovered = good;
  uncovered.layers[1].shards[2].samples.end = 15;
  EXPECT_EQ(validation_error(uncovered, graph, 3), "plan layer 'conv1': samples [15, 16) are covered by no rank");

  Plan twice = good;
  twice.layers[1].shards[1].samples.begin = 5;  // rank 0 holds [0, 6)
  EXPECT_EQ(validation_error(twice, graph, 3), "plan layer 'conv1': samples [5, 6) are covered twice");

  EXPECT_EQ(validation_error(good, graph, 2), "plan layer 'input': rank 2 is not in the cluster of 2 devices");

  Plan other = good;
  other.model = "vgg16";
  EXPECT_EQ(validation_error(other, graph, 3), "plan is for model 'vgg16', not 'fmnist_cnn'");

  Plan renamed = good;
  renamed.layers[2].layer = "bn9";
  EXPECT_EQ(validation_error(renamed, graph, 3), "plan layer #2 is 'bn9' but the model's layer #2 is 'bn1'");

  Plan repeated = good;
  repeated.layers[1].shards[1].rank = 0;
  EXPECT_EQ(validation_error(repeated, graph, 3), "plan layer 'conv1': rank 0 appears twice");
}

TEST(PlanJson, RoundTripOfAnUnevenHandWrittenPlan) {
  // A layer on 1 rank between layers on 3 (5/5/6 samples), as the runtime must handle.
  const graph::Graph graph = graph::build_zoo_model("fmnist_cnn");
  Plan plan = plan_data_parallel(graph, 3, 16);
  plan.strategy = "hand";
  plan.layers[*graph.find("fc1")].shards = {Shard{2, {0, 16}}};
  const Plan read = plan_from_json_text(plan_to_json_text(plan));
  EXPECT_EQ(plan_to_json_text(read), plan_to_json_text(plan));
  validate_plan(read, graph, cluster::builtin_cluster("cpu", 3));
  // flatten (ranks 0..2: [0,6) [6,11) [11,16)) -> fc1 (rank 2 holds all 16):
  // rank 0 sends 6 samples, rank 1 sends 5, rank 2 keeps its 5 locally.
  const auto transfers = activation_transfers(read, *graph.find("flatten"), *graph.find("fc1"));
  ASSERT_EQ(transfers.size(), 3u);
  EXPECT_EQ(transfers[0], (cost::Transfer{0, 2, {0, 6}}));
  EXPECT_EQ(transfers[1], (cost::Transfer{1, 2, {6, 11}}));
  EXPECT_TRUE(transfers[2].local());
}

TEST(PlanJson, RefusesMalformedFiles) {
  EXPECT_THROW(plan_from_json_text(R"({"format": "burst.model", "version": 1})"), UserError);
  EXPECT_THROW(plan_from_json_text(R"({"format": "burst.plan", "version": 1, "model": "m",
      "global_batch": 4, "devices": 2, "layers": [{"layer": "a", "shards": [[0, 0]]}]})"), UserError);
  EXPECT_THROW(plan_from_json_text(R"({"format": "burst.plan", "version": 1, "model": "m",
      "global_batch": 4, "devices": 0, "layers": []})"), UserError);
}

}  // namespace
}  // namespace burst::plan
