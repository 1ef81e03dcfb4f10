// What placement-invariant dropout (burst/layers/sample_random.h: Philox draws keyed per
// global sample) costs against torch.dropout (one Bernoulli draw per element from the
// process's generator), forward and backward, on one thread, for the dropout shapes of the
// zoo's models. Run `build/release/bench/dropout_cost --benchmark_repetitions=3`; the
// per-shape ratio is the two medians side by side.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "burst/layers/sample_random.h"

namespace {

// [batch, elements per sample] of the zoo's dropouts at a small per-device batch:
// fmnist_cnn's [128] after fc1, vgg16's [4096] classifier, GPT-2's [1024 x 768] residual.
const std::vector<std::vector<int64_t>> kShapes = {{32, 128}, {32, 4096}, {4, 1024 * 768}};

template <typename Dropout>
void forward_backward(benchmark::State& state, Dropout dropout) {
  torch::set_num_threads(1);
  const auto& shape = kShapes.at(static_cast<size_t>(state.range(0)));
  const torch::Tensor x = torch::randn(shape).requires_grad_(true);
  int64_t step = 0;
  for (auto _ : state) {
    torch::Tensor y = dropout(x, step++);
    y.backward(torch::ones_like(y));
    benchmark::DoNotOptimize(x.grad().data_ptr());
    x.mutable_grad().reset();
  }
  state.SetItemsProcessed(state.iterations() * x.numel());
  state.SetLabel(std::to_string(shape[0]) + "x" + std::to_string(shape[1]));
}

void BM_TorchDropout(benchmark::State& state) {
  forward_backward(state, [](const torch::Tensor& x, int64_t) { return torch::dropout(x, 0.1, true); });
}

void BM_SampleDropout(benchmark::State& state) {
  forward_backward(state, [](const torch::Tensor& x, int64_t step) {
    return burst::layers::sample_dropout(x, 0.1, burst::layers::RandomKey{7, step, 0}, 3);
  });
}

BENCHMARK(BM_TorchDropout)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleDropout)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
