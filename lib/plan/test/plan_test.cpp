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

// A two-stage pipeline of the BN-free gpt2 in miniature: blocks h.0 on ranks 0 and 1
// (micro-batches of 4 split 2 + 2), h.1 onwards on rank 2; 4 micro-batches of 4.
constexpr const char* kTinyGpt2 = "gpt2:layers=2,width=64,heads=2,seq=16,vocab=64";
Plan two_stage_pipeline(const graph::Graph& graph) {
  Plan plan = plan_data_parallel(graph, 3, 16);
  plan.strategy = "pipeline";
  plan.pipeline.micro_batches = 4;
  plan.pipeline.schedule = Schedule::OneFOneB;
  const graph::LayerId second = *graph.find("transformer.h.1.ln_1");
  plan.pipeline.stage_starts = {second};
  for (size_t id = 0; id < plan.layers.size(); ++id) {
    plan.layers[id].shards = static_cast<graph::LayerId>(id) < second
                                 ? std::vector<Shard>{Shard{0, {0, 2}}, Shard{1, {2, 4}}}
                                 : std::vector<Shard>{Shard{2, {0, 4}}};
  }
  return plan;
}

TEST(PipelinePlans, RoundTripAndVersionOneStillReads) {
  const graph::Graph graph = graph::build_zoo_model(kTinyGpt2);
  const Plan plan = two_stage_pipeline(graph);
  EXPECT_EQ(validation_error(plan, graph, 3), "(no error)");
  const std::string text = plan_to_json_text(plan);
  EXPECT_NE(text.find(R"("pipeline": {"micro_batches":4,"schedule":"1f1b","stage_starts":["transformer.h.1.ln_1"]})"),
            std::string::npos) << text;
  const Plan read = plan_from_json_text(text);
  EXPECT_EQ(plan_to_json_text(read), text);
  EXPECT_EQ(read.stage_count(), 2);
  EXPECT_EQ(read.micro_batch(), 4);
  EXPECT_EQ(read.stage_ranks(0), (std::vector<int>{0, 1}));
  EXPECT_EQ(read.stage_ranks(1), (std::vector<int>{2}));
  EXPECT_NE(placement_fingerprint(read), placement_fingerprint(plan_data_parallel(graph, 3, 16)));

  // A version 1 file (no pipeline) reads as one micro-batch and one stage; it has no
  // "pipeline" key to give.
  const std::string v1 = R"({"format": "burst.plan", "version": 1, "model": "m", "global_batch": 2, "devices": 1,
      "layers": [{"layer": "a", "shards": [[0, 0, 2]]}]})";
  EXPECT_EQ(plan_from_json_text(v1).pipeline.micro_batches, 1);
  std::string v1_with_pipeline = v1;
  v1_with_pipeline.insert(v1.find("\"layers\""), R"("pipeline": {"micro_batches": 2}, )");
  EXPECT_THROW(plan_from_json_text(v1_with_pipeline), UserError);
}

std::string json_refusal(const std::string& pipeline) {
  const std::string text = R"({"format": "burst.plan", "version": 2, "model": "m", "global_batch": 2, "devices": 1,
      "pipeline": )" + pipeline + R"(, "layers": [{"layer": "a", "shards": [[0, 0, 2]]}]})";
  try {
    plan_from_json_text(text);
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(PipelinePlans, BadPipelinesAreRefusedInOneLine) {
  EXPECT_EQ(json_refusal(R"({"micro_batches": 1, "schedule": "zb"})"),
            "unknown pipeline schedule 'zb' (known: gpipe, 1f1b, interleaved, zb-h1)");
  EXPECT_EQ(json_refusal(R"({"micro_batches": 1, "stage_starts": ["b"]})"),
            "plan pipeline: field 'stage_starts' names 'b', which is not a layer of the plan");

  const graph::Graph graph = graph::build_zoo_model(kTinyGpt2);
  const Plan good = two_stage_pipeline(graph);
  Plan odd = good;
  odd.pipeline.micro_batches = 3;
  EXPECT_EQ(validation_error(odd, graph, 3), "plan: 3 micro-batches do not divide the global batch of 16");
  Plan none = good;
  none.pipeline.micro_batches = 0;
  EXPECT_EQ(validation_error(none, graph, 3), "plan: 0 micro-batches cannot cut the global batch of 16");

  Plan branch = good;
  branch.pipeline.stage_starts = {*graph.find("transformer.h.1.mlp.c_fc")};
  EXPECT_EQ(validation_error(branch, graph, 3),
            "plan: the stage starting at layer 'transformer.h.1.mlp.c_fc' is inside a branch: layers "
            "'transformer.h.1.add_1' and 'transformer.h.1.ln_2' both feed layers after it");

  Plan unordered = good;
  unordered.pipeline.stage_starts = {14, 4};
  EXPECT_EQ(validation_error(unordered, graph, 3),
            "plan: stage starts must ascend within layers 1..26, got layer #4 after #14");

  Plan shared = good;  // the last layer's rank 0 is stage 0's
  shared.layers.back().shards = {Shard{0, {0, 4}}};
  EXPECT_EQ(validation_error(shared, graph, 3),
            "plan layer 'loss': rank 0 of stage 1 already runs layers of stage 0");

  Plan whole_batch = good;  // shards of the global batch, not of a micro-batch
  whole_batch.layers[0].shards = {Shard{0, {0, 16}}};
  EXPECT_EQ(validation_error(whole_batch, graph, 3),
            "plan layer 'input_ids': samples [4, 16) are beyond the micro-batch");

  const graph::Graph cnn = graph::build_zoo_model("fmnist_cnn");
  Plan batchnorm = plan_data_parallel(cnn, 2, 16);
  batchnorm.pipeline.micro_batches = 2;
  for (LayerPlacement& layer : batchnorm.layers) layer.shards = {Shard{0, {0, 4}}, Shard{1, {4, 8}}};
  EXPECT_EQ(validation_error(batchnorm, cnn, 2),
            "plan layer 'bn1': BatchNorm normalises with the statistics of the whole batch, which 2 micro-batches "
            "do not see at once; use one micro-batch or a model without BatchNorm");
}

}  // namespace
}  // namespace burst::plan
