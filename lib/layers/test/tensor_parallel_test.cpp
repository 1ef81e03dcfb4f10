// Tensor-split parts (tensor_parallel.h): slices join back to the whole tensor, a features
// slice's dropout draws the whole sample's mask, and k parts of a column -> row pair or of
// a heads-split attention, summed by a group of k threads, equal the whole layer.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "burst/graph/builder.h"
#include "burst/layers/sample_random.h"
#include "burst/layers/tensor_parallel.h"

namespace burst::layers {
namespace {

using cost::SplitKind;

TEST(TensorParallel, SlicesJoinBackToTheWholeTensor) {
  const torch::Tensor qkv = torch::arange(12 * 4, torch::kFloat32).view({12, 4});  // [3D, D], D = 4
  const ParameterSlicing packed = parameter_slicing(SplitKind::Heads, "in_proj_weight");
  ASSERT_TRUE(packed.sliced);
  EXPECT_EQ(packed.chunks, 3);
  std::vector<torch::Tensor> slices;
  for (int32_t part = 0; part < 2; ++part) slices.push_back(slice_for_part(qkv, packed, part, 2));
  // Part 1 holds rows 2-3 (its queries), 6-7 (keys) and 10-11 (values).
  EXPECT_TRUE(torch::equal(slices[1].narrow(0, 2, 2), qkv.narrow(0, 6, 2)));
  EXPECT_TRUE(torch::equal(join_parts(slices, packed), qkv));
  const ParameterSlicing row = parameter_slicing(SplitKind::Row, "weight");
  EXPECT_EQ(row.dim, 1);
  EXPECT_FALSE(parameter_slicing(SplitKind::Row, "bias").sliced);
  EXPECT_FALSE(parameter_slicing(SplitKind::Heads, "out_proj.bias").sliced);
  EXPECT_FALSE(parameter_slicing(SplitKind::Replicate, "weight").sliced);
}

TEST(TensorParallel, AFeaturesSlicesDropoutIsTheWholeSamplesMask) {
  // Samples [5, 3, 12] split 4 ways on the last axis: slice p of the whole mask.
  const torch::Tensor x = torch::ones({5, 3, 12});
  const RandomKey whole{11, 4, 20};
  const torch::Tensor one = sample_dropout_mask(x, 0.4, whole, 2);
  for (int64_t part = 0; part < 4; ++part) {
    RandomKey slice = whole;
    slice.features = 12;
    slice.feature_begin = 3 * part;
    EXPECT_TRUE(torch::equal(sample_dropout_mask(x.narrow(2, 3 * part, 3), 0.4, slice, 2), one.narrow(2, 3 * part, 3)))
        << "part " << part;
  }
}

// Sums a tensor over `parts` threads: each adds its value, the last one in publishes.
class ThreadGroup {
 public:
  explicit ThreadGroup(int parts) : parts_(parts) {}
  TensorGroupContext context() {
    return TensorGroupContext{[this](torch::Tensor& x) { sum(x); }};
  }

 private:
  void sum(torch::Tensor& x) {
    std::unique_lock<std::mutex> lock(mutex_);
    const int64_t round = round_;
    total_ = arrived_ == 0 ? x.clone() : total_ + x;
    if (++arrived_ == parts_) {
      result_ = total_;
      arrived_ = 0;
      ++round_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return round_ != round; });
    }
    x.copy_(result_);
  }
  int parts_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int arrived_ = 0;
  int64_t round_ = 0;
  torch::Tensor total_, result_;
};

// Runs `layer_ids` of `graph` whole and as `parts` parts (one thread each) on `input`;
// checks output and input gradient (of sum(output * weights)) equal the whole layers'.
void expect_parts_equal_whole(const graph::Graph& graph, const std::vector<std::pair<graph::LayerId, SplitKind>>& layers,
                              const torch::Tensor& input, int32_t parts) {
  const RandomKey key{3, 1, 0};
  auto build = [&](graph::LayerId id) {
    torch::manual_seed(static_cast<uint64_t>(id));
    auto module = make_layer_module(graph, id);
    module->module().to(torch::kFloat64);
    return module;
  };
  torch::Tensor x = input.clone().requires_grad_(true);
  torch::Tensor y = x;
  for (const auto& [id, kind] : layers) y = build(id)->forward({y}, key);
  const torch::Tensor probe = torch::randn(y.sizes(), torch::kFloat64);
  (y * probe).sum().backward();

  ThreadGroup threads(parts);
  std::vector<TensorGroupContext> contexts(static_cast<size_t>(parts), threads.context());
  std::vector<std::vector<std::unique_ptr<LayerModule>>> modules(static_cast<size_t>(parts));
  for (int32_t part = 0; part < parts; ++part) {
    for (const auto& [id, kind] : layers) {
      modules[static_cast<size_t>(part)].push_back(make_part_module(graph, id, build(id), cost::TensorSplit{kind, parts},
                                                                    part, &contexts[static_cast<size_t>(part)]));
    }
  }
  std::vector<torch::Tensor> outputs(static_cast<size_t>(parts)), gradients(static_cast<size_t>(parts));
  std::vector<std::thread> workers;
  for (int32_t part = 0; part < parts; ++part) {
    workers.emplace_back([&, part] {
      torch::Tensor xp = input.clone().requires_grad_(true);
      torch::Tensor yp = xp;
      for (auto& module : modules[static_cast<size_t>(part)]) yp = module->forward({yp}, key);
      (yp * probe).sum().backward();
      outputs[static_cast<size_t>(part)] = yp.detach();
      gradients[static_cast<size_t>(part)] = xp.grad();
    });
  }
  for (std::thread& worker : workers) worker.join();
  for (int32_t part = 0; part < parts; ++part) {
    EXPECT_TRUE(torch::allclose(outputs[static_cast<size_t>(part)], y.detach(), 1e-12, 1e-12)) << "part " << part;
    EXPECT_TRUE(torch::allclose(gradients[static_cast<size_t>(part)], x.grad(), 1e-12, 1e-12)) << "part " << part;
  }
}

TEST(TensorParallel, AColumnGeluRowPairOnFourPartsEqualsTheWholeLayers) {
  graph::GraphBuilder b("mlp");
  auto x = b.input("input", {5, 8});
  x = b.linear("fc", x, 16);
  x = b.gelu("gelu", x);
  b.linear("proj", x, 8);
  const graph::Graph graph = std::move(b).build();
  expect_parts_equal_whole(graph, {{1, SplitKind::Column}, {2, SplitKind::Features}, {3, SplitKind::Row}},
                           torch::randn({3, 5, 8}, torch::kFloat64), 4);
}

TEST(TensorParallel, HeadsSplitAttentionWithDropoutOnTwoPartsEqualsTheWholeLayer) {
  graph::GraphBuilder b("attention");
  auto x = b.input("input", {6, 8});
  b.self_attention("attn", x, 4, /*causal=*/true, /*dropout=*/0.3);
  const graph::Graph graph = std::move(b).build();
  expect_parts_equal_whole(graph, {{1, SplitKind::Heads}}, torch::randn({3, 6, 8}, torch::kFloat64), 2);
}

}  // namespace
}  // namespace burst::layers
