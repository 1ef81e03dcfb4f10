#include "burst/cost/analytic.h"

#include <cmath>

#include <gtest/gtest.h>

#include "burst/cost/fake_cost_model.h"
#include "burst/cost/memory.h"
#include "burst/graph/builder.h"
#include "burst/graph/zoo.h"
#include "burst/util/error.h"

namespace burst::cost {
namespace {

// A device with round numbers: 100 GFLOP/s peak, 10 GB/s, 1 us overhead.
DeviceSpec round_device() {
  DeviceSpec device;
  device.kind = "test";
  device.peak_flops = 100e9;
  device.memory_bandwidth = Bandwidth::gigabytes_per_s(10);
  device.overhead = Seconds::from_us(1);
  device.curves[static_cast<int>(OpClass::Conv)] = EfficiencyCurve{0.5, 4, EfficiencyCurve::Scale::Batch, 2};
  device.curves[static_cast<int>(OpClass::Matmul)] = EfficiencyCurve{1.0, 1, EfficiencyCurve::Scale::Batch, 2};
  device.curves[static_cast<int>(OpClass::Memory)] = EfficiencyCurve{1.0, 0, EfficiencyCurve::Scale::Batch, 1};
  return device;
}

TEST(Analytic, RooflineComputeBound) {
  const AnalyticCostModel model(round_device());
  // conv, 1 GFLOP per sample, batch 4: roofline = max(4e9 / 100e9, 4 KB / 10 GB/s)
  // = 40 ms; eff = 0.5 x 4 / (4 + 4) = 0.25 -> 160 ms, + 1 us overhead.
  // backward = 2 x forward.
  const LayerTime t = model.time(layer_work("conv2d", 4, 1'000'000'000, 1000, 0, 0));
  EXPECT_NEAR(t.forward.ms(), 160.001, 1e-9);
  EXPECT_NEAR(t.backward.ms(), 320.002, 1e-9);
}

TEST(Analytic, RooflineMemoryBound) {
  const AnalyticCostModel model(round_device());
  // relu, 1M elements per sample (4 MB in + 4 MB out), batch 2: bytes = 2 x 8e6 = 16 MB
  // at 10 GB/s = 1.6 ms > FLOPs 2e6 / 100e9 = 20 us; eff 1 x 2 / (2 + 0) = 1.
  const LayerTime t = model.time(layer_work("relu", 2, 1'000'000, 4'000'000, 4'000'000, 0));
  EXPECT_NEAR(t.forward.ms(), 1.601, 1e-9);
  EXPECT_NEAR(t.backward.ms(), 1.601, 1e-9);  // backward_ratio 1
  // Weights count as bytes too: a linear of 1M params reads 4 MB even at batch 1:
  // roofline = max(2e6 / 100e9 = 20 us, (4e6 + 8) B / 10 GB/s = 0.4000008 ms);
  // matmul eff at batch 1 = 1 x 1 / (1 + 1) = 0.5 -> 0.8000016 ms, + 1 us.
  const LayerTime fc = model.time(layer_work("linear", 1, 2'000'000, 4, 4, 1'000'000));
  EXPECT_NEAR(fc.forward.ms(), 0.8000016 + 0.001, 1e-9);
}

TEST(Analytic, LayerWorkSeesAConvAsAGemm) {
  // 3x3 conv 512 -> 512 on a 2x2 map, no bias, batch 2: 2048 outputs per sample,
  // F = 2 x 4608 x 2048 = 18,874,368, params 512 x 4608 = 2,359,296.
  // K = F / (2 x 2048) = 4608, N = params / K = 512, rows = 2 x 2048 / 512 = 8.
  const LayerWork work = layer_work("conv2d", 2, 18'874'368, 512 * 4 * 4, 2048 * 4, 2'359'296);
  EXPECT_DOUBLE_EQ(work.rows, 8.0);
  EXPECT_DOUBLE_EQ(work.flops, 2 * 18'874'368.0);
  // bytes = 2 x (8 KB in + 8 KB out) + 4 x 2,359,296 weights.
  EXPECT_DOUBLE_EQ(work.bytes, 2 * (8192.0 + 8192.0) + 4 * 2'359'296.0);
  // With a rows curve {eff_max 1, x_half 8}: efficiency 8 / 16 = 0.5.
  EfficiencyCurve rows{1.0, 8, EfficiencyCurve::Scale::Rows, 2};
  EXPECT_DOUBLE_EQ(rows.efficiency(work), 0.5);
}

TEST(Analytic, FitRecoversAKnownCurve) {
  // Synthesise a profile from known curves, then fit: the fit must reproduce it closely.
  DeviceSpec truth = round_device();
  truth.curves[static_cast<int>(OpClass::Conv)] = EfficiencyCurve{0.4, 6, EfficiencyCurve::Scale::Batch, 2.5};
  const AnalyticCostModel generator(truth);
  Profile profile;
  profile.device = "test";
  for (int64_t flops : {10'000'000, 300'000'000, 2'000'000'000}) {
    for (int64_t batch : {1, 2, 4, 8, 16, 32}) {
      ProfileEntry entry;
      entry.signature = "conv" + std::to_string(flops);
      entry.op = "conv2d";
      entry.batch = batch;
      entry.forward_flops_per_sample = flops;
      entry.input_bytes_per_sample = 1000;
      const LayerTime t = generator.time(layer_work("conv2d", batch, flops, 1000, 0, 0));
      entry.forward = t.forward;
      entry.backward = t.backward;
      profile.entries.push_back(entry);
    }
  }
  const DeviceSpec fitted = fit_device(round_device(), profile);
  const FitError error = evaluate_fit(fitted, profile);
  EXPECT_EQ(error.entries, 18);
  EXPECT_LT(error.median_relative, 0.05);  // grid resolution, not noise: data is exact
  EXPECT_EQ(fitted.curve("conv2d").scale, EfficiencyCurve::Scale::Batch);
  EXPECT_NEAR(fitted.curve("conv2d").backward_ratio, 2.5, 1e-9);
}

TEST(Analytic, CatalogKnowsItsDevices) {
  EXPECT_DOUBLE_EQ(catalog_device("a100").peak_flops, 156e12);
  EXPECT_DOUBLE_EQ(catalog_device("h200").memory_bandwidth.bytes_per_second(), 4800e9);
  EXPECT_THROW(catalog_device("tpu"), UserError);
}

TEST(Analytic, PeaksPerPrecisionAndRefusals) {
  const DeviceSpec a100 = catalog_device("a100");
  EXPECT_EQ(a100.precision, Precision::Tf32);  // the default where TF32 units exist
  EXPECT_DOUBLE_EQ(at_precision(a100, Precision::Bf16).peak_flops, 312e12);
  EXPECT_DOUBLE_EQ(at_precision(a100, Precision::Fp32).peak_flops, 19.5e12);
  EXPECT_DOUBLE_EQ(at_precision(catalog_device("h100-sxm"), Precision::Fp16).peak_flops, 989.4e12);
  EXPECT_DOUBLE_EQ(at_precision(catalog_device("v100"), Precision::Fp16).peak_flops, 125e12);
  EXPECT_EQ(catalog_device("v100").precision, Precision::Fp32);
  try {
    at_precision(a100, Precision::Fp8);
    ADD_FAILURE() << "an A100 has no FP8 units";
  } catch (const UserError& error) {
    EXPECT_EQ(std::string(error.what()), "device 'a100' has no fp8 units (it computes in: fp32, tf32, bf16, fp16)");
  }
  EXPECT_THROW(at_precision(catalog_device("v100"), Precision::Bf16), UserError);
  EXPECT_THROW(parse_precision("fp4"), UserError);
  // fp8 on an H100: GEMMs at the FP8 peak, everything else at bf16's.
  const DeviceSpec fp8 = at_precision(catalog_device("h100-sxm"), Precision::Fp8);
  EXPECT_DOUBLE_EQ(fp8.peak_for("linear"), 1978.9e12);
  EXPECT_DOUBLE_EQ(fp8.peak_for("layernorm"), 989.4e12);
  // Attention runs in bf16 under fp8; the experts' GEMMs of a mixture of experts in fp8.
  EXPECT_DOUBLE_EQ(fp8.peak_for("self_attention"), 989.4e12);
  EXPECT_DOUBLE_EQ(fp8.peak_for("moe"), 1978.9e12);
}

// An fp8 linear by hand on the round device given an fp8 peak twice its bf16 one: the GEMM
// at the fp8 peak, plus its casts at the memory bandwidth (memory curve 1.0): forward 5 bytes
// per element of the input (half the activations) and the weights, backward 5 per element of
// the output's gradient (the other half) and 2 per element of all three for the transposes.
TEST(Analytic, Fp8LinearTimeByHand) {
  DeviceSpec device = round_device();
  device.peaks.at(Precision::Bf16) = 100e9;
  device.peaks.at(Precision::Fp8) = 200e9;
  const AnalyticCostModel fp8(at_precision(device, Precision::Fp8));
  const AnalyticCostModel bf16(at_precision(device, Precision::Bf16));
  // 1 GFLOP a sample, batch 4; 1000 input and 1000 output bytes a sample (fp32 counting:
  // 250 + 250 elements), 1000 parameters.
  const LayerWork work = layer_work("linear", 4, 1'000'000'000, 1000, 1000, 1000);
  const double activations = 4 * 500.0, weights = 1000;
  const double forward_casts = 5 * (activations / 2 + weights) / 10e9;
  const double backward_casts = (5 * activations / 2 + 2 * (activations + weights)) / 10e9;
  // GEMM: 4e9 FLOPs at 200 GFLOP/s = 20 ms, matmul curve 1 x 4 / (4 + 1) = 0.8 -> 25 ms + 1 us.
  const LayerTime t = fp8.time(work);
  EXPECT_NEAR(t.forward.s(), 0.025 + 1e-6 + forward_casts, 1e-12);
  EXPECT_NEAR(t.backward.s(), 2 * (0.025 + 1e-6) + backward_casts, 1e-12);
  EXPECT_NEAR(bf16.time(work).forward.s(), 0.050 + 1e-6, 1e-12);
  // A layernorm under fp8 is a bf16 op: no casts.
  const LayerWork norm = layer_work("layernorm", 4, 5000, 1000, 1000, 2);
  EXPECT_DOUBLE_EQ(fp8.time(norm).forward.s(), bf16.time(norm).forward.s());
}

TEST(Analytic, PrecisionMovesComputeByPeakAndMemoryByBytes) {
  // A big linear is compute-bound: bf16 halves its roofline (312 vs 156 TFLOP/s) and the
  // efficiency curve (batch-scaled in the test device) stays. A ReLU is memory-bound: bf16
  // moves half the bytes.
  graph::GraphBuilder b("two");
  std::string x = b.input("input", {4096});
  x = b.linear("fc", x, 4096);
  x = b.relu("relu", x);
  const graph::Graph graph = std::move(b).build();
  DeviceSpec device = catalog_device("a100");
  device.overhead = Seconds(0);
  const AnalyticCostModel tf32(device), bf16(at_precision(device, Precision::Bf16));
  const auto fc = *graph.find("fc"), relu = *graph.find("relu");
  // The ratio of peaks, times the curves' tops: the catalog's fitted-shape matmul curve tops
  // out at 0.6 in tf32 and, under bf16, at the A100's measured 267.9 of 312 TFLOP/s
  // (gemm_efficiency_16bit); the batch term is the same at both.
  const double gemm_ratio = 0.5 * 0.6 / (267.9 / 312);
  EXPECT_NEAR(bf16.estimate(graph, fc, 4096)->time.forward / tf32.estimate(graph, fc, 4096)->time.forward, gemm_ratio,
              1e-9);
  const double relu_ratio =
      bf16.estimate(graph, relu, 4096)->time.forward / tf32.estimate(graph, relu, 4096)->time.forward;
  EXPECT_NEAR(relu_ratio, 0.5, 1e-9);  // the catalog's memory curve is batch-scaled: the same efficiency
  // A measured time carried to bf16 moves by the analytic ratio of the same call.
  auto measured = std::make_unique<FakeCostModel>(
      "test", std::map<std::string, FakeLayerCost>{{"fc", {{Seconds::from_ms(10), Seconds{}}, {Seconds::from_ms(20), Seconds{}}}}},
      std::map<std::string, Seconds>{});
  const PrecisionScaledCostModel scaled(std::move(measured), device, at_precision(device, Precision::Bf16));
  EXPECT_NEAR(scaled.estimate(graph, fc, 4096)->time.forward.ms(), 10 * gemm_ratio, 1e-9);
  EXPECT_NEAR(scaled.estimate(graph, fc, 4096)->time.backward.ms(), 20 * gemm_ratio, 1e-9);
}

// A device whose matmul and memory curves are flat (saturated at any size, as the A100 fit's
// are: x_half of a few FLOPs or bytes) and without launch overhead, so times are hand-derived.
DeviceSpec flat_a100_80gb() {
  DeviceSpec device = catalog_device("a100-80gb");
  device.overhead = Seconds(0);
  device.op_curves.clear();
  device.curves[static_cast<int>(OpClass::Matmul)] = EfficiencyCurve{0.433, 1e-6, EfficiencyCurve::Scale::Work, 2};
  device.curves[static_cast<int>(OpClass::Memory)] = EfficiencyCurve{0.5, 1e-6, EfficiencyCurve::Scale::Work, 3};
  return device;
}

TEST(Analytic, SixteenBitGemmRunsAtTheMeasuredCublasRate) {
  // 8192 rows x 2048 by 2048 x 8192 (the 39.1B row's MLP GEMM at one micro-batch of 4):
  // 2 x 8192 x 2048 x 8192 FLOPs plus 8192 x 8192 bias adds, compute-bound.
  graph::GraphBuilder b("gemm");
  std::string x = b.input("input", {2048});
  x = b.linear("fc", x, 8192);
  const graph::Graph graph = std::move(b).build();
  const auto fc = *graph.find("fc");
  const double flops = 2.0 * 8192 * 2048 * 8192 + 8192.0 * 8192;
  const DeviceSpec device = flat_a100_80gb();
  for (const Precision sixteen : {Precision::Bf16, Precision::Fp16}) {
    const AnalyticCostModel model(at_precision(device, sixteen));
    EXPECT_NEAR(model.estimate(graph, fc, 8192)->time.forward.s(), flops / 267.9e12, 1e-12);
  }
  // TF32 keeps the fitted top: 0.433 of 156 TFLOP/s.
  EXPECT_NEAR(AnalyticCostModel(device).estimate(graph, fc, 8192)->time.forward.s(), flops / (0.433 * 156e12), 1e-12);
}

TEST(Analytic, AttentionAddsItsScoreMatrixTraffic) {
  // 2 heads of 1024 tokens, 4 samples: 2 x 1024^2 x 4 scores. In fp16 with dropout, forward
  // moves 6 two-byte passes and a one-byte mask (13 bytes a score), backward 9 passes and
  // the mask (19 bytes), at half of 2039 GB/s (the flat memory curve); heads split in 2
  // halves it.
  graph::GraphBuilder b("attention");
  std::string x = b.input("input", {1024, 64});
  x = b.self_attention("attn", x, 2, /*causal=*/true, 0.1);
  const graph::Graph graph = std::move(b).build();
  const auto attn = *graph.find("attn");
  const AnalyticCostModel model(at_precision(flat_a100_80gb(), Precision::Fp16));
  const double scores = 2.0 * 1024 * 1024 * 4, rate = 0.5 * 2039e9;
  const LayerTime core = model.attention_core_memory(graph, attn, 4, 1);
  EXPECT_NEAR(core.forward.s(), 13 * scores / rate, 1e-12);
  EXPECT_NEAR(core.backward.s(), 19 * scores / rate, 1e-12);
  EXPECT_NEAR(model.attention_core_memory(graph, attn, 4, 2).forward.s(), 13 * scores / 2 / rate, 1e-12);
  const LayerTime whole = model.estimate(graph, attn, 4)->time;
  const LayerTime gemms = model.time(layer_work("self_attention", 4, graph.info(attn).forward_flops, 1024 * 64 * 4,
                                                 1024 * 64 * 4, graph.info(attn).params));
  EXPECT_NEAR(whole.forward.s(), gemms.forward.s() + core.forward.s(), 1e-12);
  // Not an attention layer: nothing added.
  EXPECT_EQ(model.attention_core_memory(graph, *graph.find("input"), 4, 1).forward.s(), 0);
}

TEST(LayeredCostModel, MeasuredFirstAnalyticForGaps) {
  const graph::Graph graph = graph::build_zoo_model("fmnist_cnn");
  auto measured = std::make_unique<FakeCostModel>(
      "test",
      std::map<std::string, FakeLayerCost>{
          {"conv1", {{Seconds::from_ms(1), Seconds::from_ms(0.5)}, {Seconds::from_ms(2), Seconds{}}}}},
      std::map<std::string, Seconds>{{"conv1", Seconds::from_ms(0.25)}});
  const LayeredCostModel model(std::move(measured), std::make_unique<AnalyticCostModel>(round_device()));
  // conv1 at batch 4 from the fake: forward 1 + 0.5 x 4 = 3 ms, backward 2 ms.
  const auto conv = model.estimate(graph, *graph.find("conv1"), 4);
  EXPECT_EQ(conv->source, CostSource::Measured);
  EXPECT_DOUBLE_EQ(conv->time.forward.ms(), 3.0);
  EXPECT_DOUBLE_EQ(conv->time.backward.ms(), 2.0);
  EXPECT_EQ(model.estimate(graph, *graph.find("fc1"), 4)->source, CostSource::Analytic);
  // The input layer computes nothing, whatever the device's overhead.
  EXPECT_EQ(model.estimate(graph, *graph.find("input"), 4)->time.total(), Seconds{});
  // Updates: conv1's measured; fc1's analytic, 12 bytes per parameter at 10 GB/s; none for a
  // layer without parameters.
  EXPECT_DOUBLE_EQ(model.update(graph, *graph.find("conv1"))->ms(), 0.25);
  const graph::LayerId fc1 = *graph.find("fc1");
  EXPECT_DOUBLE_EQ(model.update(graph, fc1)->s(), 12.0 * static_cast<double>(graph.info(fc1).params) / 10e9);
  EXPECT_EQ(model.update_or_zero(graph, *graph.find("relu1")), Seconds{});
}


// `burst profile --device cuda` names its profile after the GPU's catalog kind, from the
// name CUDA reports (torch.cuda.get_device_name on each machine).
TEST(Analytic, GpuNamesMapToCatalogKinds) {
  EXPECT_EQ(catalog_kind_of_gpu("NVIDIA H200"), "h200");
  EXPECT_EQ(catalog_kind_of_gpu("NVIDIA H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(catalog_kind_of_gpu("NVIDIA H100 PCIe"), std::nullopt);
  EXPECT_EQ(catalog_kind_of_gpu("NVIDIA A100-SXM4-40GB"), "a100");
  EXPECT_EQ(catalog_kind_of_gpu("NVIDIA A100-SXM4-80GB"), "a100-80gb");
  EXPECT_EQ(catalog_kind_of_gpu("Tesla V100-SXM2-32GB"), "v100");
  EXPECT_EQ(catalog_kind_of_gpu("NVIDIA GeForce RTX 4090"), std::nullopt);
  for (const std::string name : {"NVIDIA H200", "NVIDIA A100-SXM4-80GB"}) {
    EXPECT_NO_THROW(catalog_device(*catalog_kind_of_gpu(name))) << name;
  }
}

}  // namespace
}  // namespace burst::cost

namespace burst::cost {
namespace {

// A flash attention layer's core (its causal T x T products) runs at the device's fused
// attention rate, forward F / rate and backward 2.5 F / rate, beside the projections' GEMM
// work on the matmul curve; without a rate, or in fp32, the whole layer is one GEMM.
TEST(Analytic, AFusedAttentionCoreRunsAtTheKernelsRate) {
  const graph::Graph graph = graph::build_zoo_model("llama:layers=1,width=64,heads=4,kv_heads=2,ffn=128,vocab=64,seq=16");
  graph::LayerId attention = -1;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    if (graph.layer(id).op() == graph::OpKind::SelfAttention) attention = id;
  }
  ASSERT_GE(attention, 0);
  DeviceSpec device = round_device();
  device.peaks.at(Precision::Bf16) = 100e9;
  device.peaks.at(Precision::Fp32) = 100e9;
  device.flash_attention_16bit = 0.25;  // 25 GFLOP/s
  const AnalyticCostModel fused(at_precision(device, Precision::Bf16));
  int64_t input_bytes = 0;
  for (const graph::LayerId input : graph.inputs(attention)) input_bytes += graph.info(input).output_bytes;
  const auto& info = graph.info(attention);
  LayerWork work = layer_work("self_attention", 2, info.forward_flops, input_bytes, info.output_bytes, info.params);
  const double core = work.flops * attention_core_forward_share(graph, attention);
  ASSERT_GT(core, 0);
  LayerWork projections = work;
  projections.flops -= core;
  const LayerTime expected = fused.time(projections);
  const LayerTime t = fused.require(graph, attention, 2).time;
  EXPECT_NEAR(t.forward.s(), expected.forward.s() + core / 25e9, 1e-15);
  EXPECT_NEAR(t.backward.s(), expected.backward.s() + 2.5 * core / 25e9, 1e-15);
  device.flash_attention_16bit = 0;
  const AnalyticCostModel unfused(at_precision(device, Precision::Bf16));
  EXPECT_DOUBLE_EQ(unfused.require(graph, attention, 2).time.forward.s(), unfused.time(work).forward.s());
  device.flash_attention_16bit = 0.25;
  const AnalyticCostModel fp32(at_precision(device, Precision::Fp32));
  EXPECT_DOUBLE_EQ(fp32.require(graph, attention, 2).time.forward.s(), fp32.time(work).forward.s());
}

}  // namespace
}  // namespace burst::cost
