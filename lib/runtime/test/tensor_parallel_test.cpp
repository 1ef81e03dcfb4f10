// Tensor-split plans run for real (docs/tensor-parallel.md): Megatron-style column and row
// parallel MLPs and head-parallel attention, ranks as threads, equal one rank after 20 SGD
// steps: tiny GPT-2 (dropout 0.1 in attention, after it and after the MLP) and a tiny
// ViT-B/16 on 2 and 4 ranks, and a mixed plan whose embeddings are sample-split.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "burst/cluster/cluster.h"
#include "burst/graph/builder.h"
#include "burst/graph/zoo.h"
#include "burst/plan/plan.h"
#include "burst/planner/tensor_planner.h"
#include "burst/program/step_program.h"
#include "hand_plan.h"
#include "in_process_communicator.h"
#include "threaded_training.h"

// Its own namespace: a unity build compiles it with plan_executor_test.cpp.
namespace burst::runtime::tensor_parallel_test {
namespace {

using cost::SplitKind;
using testing::InProcessWorld;
using testing::Parameters;
using testing::tiny_gpt2;

constexpr int kSteps = 20;
constexpr int64_t kBatch = 4;

std::function<BatchSource(int64_t)> random_batches(const graph::Graph& graph) {
  return testing::random_batches(graph, kBatch);
}

ExecutorOptions sgd_options() { return testing::sgd_with_momentum(5, 0.05); }

// Megatron's splits (planner::megatron_splits) in groups of `parts` consecutive ranks of
// `devices`, from layer `first_split` on; the layers before it, and those the splits keep
// as samples (tied embedding and head, the loss), data parallel on every rank. The shards
// are of one of `micro_batches` micro-batches.
plan::Plan tensor_plan(const graph::Graph& graph, int devices, int32_t parts, const std::string& first_split = "",
                       int64_t micro_batches = 1) {
  std::vector<int> ranks;
  for (int r = 0; r < devices; ++r) ranks.push_back(r);
  plan::Plan plan = plan::plan_data_parallel(graph, devices, kBatch / micro_batches);  // shards of a micro-batch
  plan.global_batch = kBatch;
  plan.pipeline.micro_batches = micro_batches;
  plan.strategy = "hand";
  const std::vector<SplitKind> kinds = planner::megatron_splits(graph, parts);
  bool splitting = first_split.empty();
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    splitting = splitting || graph.layer(id).name == first_split;
    if (!splitting || kinds[static_cast<size_t>(id)] == SplitKind::Samples) continue;
    plan::testing::place_split(plan, graph.layer(id).name, kinds[static_cast<size_t>(id)], ranks, parts);
  }
  return plan;
}

class TensorParallelRuntime : public ::testing::Test {
 protected:
  // Trains `plan` and one rank for kSteps; the largest relative parameter difference.
  // `allreduces`: the tensor all-reduces rank 0's program makes forward, and backward less
  // `no_input_gradient` (a column split reading data sums no input gradient).
  double error_against_one_rank(const graph::Graph& graph, const plan::Plan& plan, int allreduces,
                                int no_input_gradient = 0, const ExecutorOptions& options = sgd_options()) {
    plan::validate_plan(plan, graph, cluster::builtin_cluster("cpu", plan.devices));
    const program::StepProgram program = program::build_step_program(graph, plan);
    program::check_step_program(program, graph, plan);
    // Rank 0's program: the splits' all-reduces.
    int forward = 0, backward = 0;
    for (const program::Op& op : program.ops[0]) {
      if (op.kind == program::OpKind::TensorAllReduce) ++(op.backward ? backward : forward);
    }
    EXPECT_EQ(forward, allreduces);
    EXPECT_EQ(backward, allreduces - no_input_gradient);
    InProcessWorld one(1, std::chrono::seconds(30));
    const auto [expected, expected_results] =
        testing::train_threads(graph, plan::plan_data_parallel(graph, 1, kBatch), kSteps, one, options,
                               random_batches(graph));
    InProcessWorld world(plan.devices, std::chrono::seconds(30));
    const auto [actual, results] = testing::train_threads(graph, plan, kSteps, world, options, random_batches(graph));
    for (const StepResult& result : results) EXPECT_NEAR(result.loss, expected_results[0].loss, 1e-5);
    std::string worst;
    const double error = testing::largest_relative_error(expected, actual, &worst);
    std::cout << "  " << plan.devices << " ranks: largest relative parameter error " << error << " (" << worst
              << ")\n";
    return error;
  }
};

// Two blocks, each with a heads-split attention and a column -> row MLP: 2 all-reduces a
// block forward (attention, row) and 2 backward (column, attention: gradients reach the
// embeddings and the patch projection).
constexpr int kGpt2AllReduces = 4;
constexpr int kVitAllReduces = 4;

const graph::Graph& tiny_vit() {
  static const graph::Graph graph =
      graph::build_zoo_model("vit_b_16:image_size=32,patch=8,layers=2,width=64,heads=4,mlp=128,classes=10");
  return graph;
}

TEST_F(TensorParallelRuntime, Gpt2AttentionAndMlpOnTwoPartsEqualOneRank) {
  EXPECT_LT(error_against_one_rank(tiny_gpt2(), tensor_plan(tiny_gpt2(), 2, 2), kGpt2AllReduces), 1e-5);
}

TEST_F(TensorParallelRuntime, Gpt2AttentionAndMlpOnFourPartsEqualOneRank) {
  EXPECT_LT(error_against_one_rank(tiny_gpt2(), tensor_plan(tiny_gpt2(), 4, 4), kGpt2AllReduces), 1e-5);
}

TEST_F(TensorParallelRuntime, Gpt2MixedPlanEqualsOneRank) {
  // Embeddings, dropout and head data parallel on 4 ranks (1 sample each); the blocks and
  // the final layernorm split 2 ways in 2 sample groups: re-shards from 4 sample splits to
  // 2 x 2 copies and back, and weight gradients summed over the 2 ranks of each part.
  EXPECT_LT(error_against_one_rank(tiny_gpt2(), tensor_plan(tiny_gpt2(), 4, 2, "transformer.h.0.ln_1"),
                                   kGpt2AllReduces),
            1e-5);
}

TEST_F(TensorParallelRuntime, Gpt2OnTwoPartsWithTwoMicroBatchesEqualsOneRank) {
  // Gradient accumulation over 2 micro-batches of 2: each micro-batch's forward and backward
  // make their own tensor all-reduces (2 blocks x 2 each way x 2 micro-batches).
  const plan::Plan plan = tensor_plan(tiny_gpt2(), 2, 2, "", 2);
  EXPECT_LT(error_against_one_rank(tiny_gpt2(), plan, 2 * kGpt2AllReduces), 1e-5);
}

TEST_F(TensorParallelRuntime, Gpt2PipelineOfTwoTensorSplitStagesEqualsOneRank) {
  // Stage 0 (embeddings and block 0) on ranks 0-1, stage 1 (block 1, ln_f, the tied head,
  // the loss) on ranks 2-3, each block split 2 ways; 2 micro-batches of 2 under 1F1B. Each
  // stage's rank 0 makes its block's all-reduces for both micro-batches.
  const graph::Graph& graph = tiny_gpt2();
  const graph::LayerId second = *graph.find("transformer.h.1.ln_1");
  const std::vector<SplitKind> kinds = planner::megatron_splits(graph, 2);
  plan::Plan plan = plan::plan_data_parallel(graph, 4, kBatch / 2);
  plan.global_batch = kBatch;
  plan.strategy = "hand";
  plan.pipeline = plan::Pipeline{2, plan::Schedule::OneFOneB, {second}};
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    const std::vector<int> ranks = id < second ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
    const SplitKind kind = kinds[static_cast<size_t>(id)];
    if (kind == SplitKind::Samples) {
      plan.layers[static_cast<size_t>(id)].shards = plan::even_split(ranks, kBatch / 2);
    } else {
      plan::testing::place_split(plan, graph.layer(id).name, kind, ranks, 2);
    }
  }
  EXPECT_LT(error_against_one_rank(graph, plan, kGpt2AllReduces), 1e-5);
}

TEST_F(TensorParallelRuntime, DropoutBetweenColumnAndRowDrawsOneRanksMasks) {
  // [4, 16] tokens -> fc (column, 64) -> gelu -> dropout 0.3 (features: each part draws its
  // slice's elements by their index in the whole sample) -> proj (row, 16) -> head -> loss.
  // One all-reduce forward (proj's output), none backward (fc reads data: no gradient).
  graph::GraphBuilder b("mlp_dropout");
  auto x = b.input("input", {4, 16});
  x = b.linear("fc", x, 64);
  x = b.gelu("gelu", x);
  x = b.dropout("drop", x, 0.3);
  x = b.linear("proj", x, 16);
  x = b.linear("head", x, 10);
  b.cross_entropy("loss", x);
  const graph::Graph graph = std::move(b).build();
  const plan::Plan plan = tensor_plan(graph, 4, 4);
  ASSERT_EQ(plan.layers[3].split, (cost::TensorSplit{SplitKind::Features, 4}));
  EXPECT_LT(error_against_one_rank(graph, plan, 1, 1), 1e-5);
}

TEST_F(TensorParallelRuntime, VitOnTwoAndFourPartsEqualsOneRank) {
  EXPECT_LT(error_against_one_rank(tiny_vit(), tensor_plan(tiny_vit(), 2, 2), kVitAllReduces), 1e-5);
  EXPECT_LT(error_against_one_rank(tiny_vit(), tensor_plan(tiny_vit(), 4, 4), kVitAllReduces), 1e-5);
}

}  // namespace
}  // namespace burst::runtime::tensor_parallel_test
