// The profiler: statistics and stopping rule (on made-up samples), progress output, and
// profile_model on a tiny model — entries, resume and errors. Nothing asserts how long
// anything took, only that times exist and which work was done.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "burst/cost/profile_cost_model.h"

#include "burst/cost/profile.h"
#include "burst/graph/builder.h"
#include "burst/graph/model_json.h"
#include "burst/profiler/profiler.h"
#include "burst/util/error.h"
#include "measurement.h"
#include "progress.h"

namespace burst::profiler {
namespace {

using graph::Graph;

// --- statistics -----------------------------------------------------------------------

TEST(MeasurementTest, MedianAndQuantiles) {
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);
  // 11 samples 0..10: rank q * 10 exactly, so p10 = 1 and p90 = 9.
  std::vector<double> ramp;
  for (int i = 10; i >= 0; --i) ramp.push_back(i);
  EXPECT_DOUBLE_EQ(quantile_of(ramp, 0.1), 1);
  EXPECT_DOUBLE_EQ(quantile_of(ramp, 0.9), 9);
  // Between ranks: 5 samples, q = 0.1 -> rank 0.4 -> 10 + 0.4 * (20 - 10) = 14.
  EXPECT_DOUBLE_EQ(quantile_of({10, 20, 30, 40, 50}, 0.1), 14);
}

TEST(MeasurementTest, SummarySpreadIsP10ToP90OverMedian) {
  // Samples 0..10 (median 5, p10 1, p90 9): spread (9 - 1) / 5 = 1.6.
  std::vector<double> ramp;
  for (int i = 0; i <= 10; ++i) ramp.push_back(i);
  const Summary summary = summarize(ramp);
  EXPECT_DOUBLE_EQ(summary.median.s(), 5);
  EXPECT_DOUBLE_EQ(summary.spread, 1.6);
  EXPECT_EQ(summary.repetitions, 11);
}

TEST(MeasurementTest, StabilityComparesTheLastHalfWithTheWhole) {
  // {10, 10, 10, 10, 10}: both medians 10.
  EXPECT_TRUE(is_stable({10, 10, 10, 10, 10}, 0.02));
  // {20, 20, 20, 10, 10, 10}: whole median 15, last half {10, 10, 10} median 10: 33% off.
  EXPECT_FALSE(is_stable({20, 20, 20, 10, 10, 10}, 0.02));
  // {10.1, 10, 10, 10}: whole 10, last half 10.
  EXPECT_TRUE(is_stable({10.1, 10, 10, 10}, 0.02));
  EXPECT_TRUE(is_stable({0, 0, 0}, 0.02));
}

// A fake piece of work that returns `times` in order (then repeats the last).
std::function<double()> replay(std::vector<double> times, int* calls) {
  return [times = std::move(times), calls] {
    const size_t i = static_cast<size_t>((*calls)++);
    return times[std::min(i, times.size() - 1)];
  };
}

TEST(MeasurementTest, StopsAtTheMinimumWhenStable) {
  RepetitionPolicy policy;
  policy.warmup = 2;
  policy.min_repetitions = 5;
  policy.time_budget = Seconds(100);
  int calls = 0;
  // Warm-up returns 9 and 9 (ignored), then a flat 1.0.
  const Summary summary = measure(replay({9, 9, 1}, &calls), policy);
  EXPECT_EQ(calls, 2 + 5);
  EXPECT_EQ(summary.repetitions, 5);
  EXPECT_DOUBLE_EQ(summary.median.s(), 1.0);
  EXPECT_DOUBLE_EQ(summary.spread, 0.0);
}

TEST(MeasurementTest, KeepsGoingWhileTheMedianDrifts) {
  RepetitionPolicy policy;
  policy.warmup = 0;
  policy.min_repetitions = 3;
  policy.max_repetitions = 50;
  policy.time_budget = Seconds(100);
  // Samples 2, 2, 1, 1, 1, ...; the last half is the later ceil(n/2) samples.
  // n=3 {2,2,1}: whole median 2, last half {2,1} 1.5: not stable.
  // n=4 {2,2,1,1}: whole 1.5, last half {1,1} 1: not stable.
  // n=5 {2,2,1,1,1}: whole 1, last half {1,1,1} 1: stable.
  int calls = 0;
  const Summary summary = measure(replay({2, 2, 1}, &calls), policy);
  EXPECT_EQ(summary.repetitions, 5);
  EXPECT_DOUBLE_EQ(summary.median.s(), 1.0);

  // 1, 2, 3, ...: the last half's median (about 3n/4) never meets the whole's (n/2).
  calls = 0;
  policy.max_repetitions = 8;
  const Summary capped = measure([&calls] { return static_cast<double>(++calls); }, policy);
  EXPECT_EQ(capped.repetitions, 8);
}

TEST(MeasurementTest, TheTimeBudgetStopsAfterTheMinimum) {
  RepetitionPolicy policy;
  policy.warmup = 0;
  policy.min_repetitions = 4;
  policy.max_repetitions = 1000;
  policy.time_budget = Seconds(0);  // spent at once
  int calls = 0;
  const Summary summary = measure([&calls] { return (calls++ % 2 == 0) ? 1.0 : 3.0; }, policy);
  EXPECT_EQ(summary.repetitions, 4);
}

// --- progress ---------------------------------------------------------------------------

TEST(ProgressTest, PipeGetsALinePerTenthAndTerminalOneRedrawnLine) {
  std::ostringstream pipe;
  ProgressLine lines(&pipe, /*redraw=*/false, "m", 20);
  for (size_t done = 0; done <= 20; ++done) lines.update(done, Seconds(0.5));
  lines.finish();
  const std::string text = pipe.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 10);  // 2/20, 4/20, ..., 20/20
  EXPECT_NE(text.find("20/20 signatures"), std::string::npos);
  EXPECT_EQ(text.find('\r'), std::string::npos);

  std::ostringstream terminal;
  ProgressLine bar(&terminal, /*redraw=*/true, "m", 3);
  for (size_t done = 0; done <= 3; ++done) bar.update(done, Seconds(1));
  bar.finish();
  const std::string drawn = terminal.str();
  EXPECT_EQ(std::count(drawn.begin(), drawn.end(), '\r'), 4);
  EXPECT_EQ(std::count(drawn.begin(), drawn.end(), '\n'), 1);
  EXPECT_NE(drawn.find("3/3 signatures"), std::string::npos);
}

// --- profile_model ----------------------------------------------------------------------

// input [16] -> fc (linear 16 -> 8) -> relu -> relu2: relu and relu2 share a signature
// (relu{}[8]), so 3 distinct signatures.
Graph tiny_model() {
  graph::GraphBuilder b("tiny");
  auto x = b.input("input", {16});
  x = b.linear("fc", x, 8);
  x = b.relu("relu", x);
  b.relu("relu2", x);
  return std::move(b).build();
}

// Few, quick repetitions: the tests check what is measured, not how well.
ProfileOptions quick_options(const std::string& path = "") {
  ProfileOptions options;
  options.warmup = 1;
  options.min_repetitions = 3;
  options.max_repetitions = 5;
  options.time_budget = Seconds(0.05);
  options.output_path = path;
  return options;
}

class ProfileModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("burst_profiler_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

TEST_F(ProfileModelTest, MeasuresEverySignatureAtEveryBatch) {
  const Graph graph = tiny_model();
  const cost::Profile profile = profile_model(graph, {2, 1, 2}, quick_options());
  EXPECT_EQ(profile.device, "cpu");
  EXPECT_NE(profile.description.find("1 thread, libtorch "), std::string::npos);
  ASSERT_EQ(profile.entries.size(), 3u * 2u);  // batches deduplicated
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    const std::string signature = graph::layer_signature(graph, id);
    const auto* batches = profile.find(signature);
    ASSERT_NE(batches, nullptr) << signature;
    ASSERT_EQ(batches->size(), 2u);
    for (const auto& [batch, entry] : *batches) {
      SCOPED_TRACE(signature + " batch " + std::to_string(batch));
      EXPECT_EQ(entry->op, graph::op_name(graph.layer(id).op()));
      EXPECT_EQ(entry->params, graph.info(id).params);
      EXPECT_EQ(entry->output_bytes_per_sample, graph.info(id).output_bytes);
      EXPECT_EQ(entry->forward_flops_per_sample, graph.info(id).forward_flops);
      ASSERT_TRUE(entry->backward_input.has_value());
      ASSERT_TRUE(entry->backward_weight.has_value());
      ASSERT_TRUE(entry->update.has_value());
      // The optimizer's update: measured once per signature, the same at every batch.
      EXPECT_EQ(entry->update->s(), batches->begin()->second->update->s());
      if (graph.info(id).params > 0) {
        EXPECT_GT(entry->update->s(), 0);
      } else {
        EXPECT_EQ(entry->update->s(), 0);
      }
      if (graph.layer(id).op() == graph::OpKind::Input) {
        // Recorded as 0, not measured.
        EXPECT_EQ(entry->forward.s(), 0);
        EXPECT_EQ(entry->backward.s(), 0);
        EXPECT_EQ(entry->repetitions, 0);
        continue;
      }
      EXPECT_GT(entry->forward.s(), 0);
      EXPECT_GT(entry->backward.s(), 0);
      EXPECT_GT(entry->backward_input->s(), 0);
      EXPECT_GE(entry->repetitions, 3);
      EXPECT_LE(entry->repetitions, 5);
      if (graph.info(id).params > 0) {
        EXPECT_GT(entry->backward_weight->s(), 0);
      } else {
        EXPECT_EQ(entry->backward_weight->s(), 0);  // relu: no weight gradient
        EXPECT_EQ(entry->backward_input->s(), entry->backward.s());
      }
    }
  }
  const auto* fc = profile.find(graph::layer_signature(graph, 1));
  EXPECT_EQ(fc->at(1)->input_bytes_per_sample, 16 * 4);
}

TEST_F(ProfileModelTest, TensorPartsMeasureEachSplitThatDividesTheLayer) {
  // fc (16 -> 8): column and row parts for k = 2 and 4 (8 and 16 divide); attn (4 heads on
  // [3, 8]): heads parts for k = 2 and 4. k = 3 divides nothing. Each part's work is its
  // share: a k-th of the FLOPs, a row part's input and a column part's output sliced.
  graph::GraphBuilder b("parts");
  auto x = b.input("input", {3, 16});
  x = b.linear("fc", x, 8);
  b.self_attention("attn", x, 4);
  const Graph graph = std::move(b).build();
  ProfileOptions options = quick_options();
  options.tensor_parts = {2, 3, 4};
  const cost::Profile profile = profile_model(graph, {1, 2}, options);
  ASSERT_EQ(profile.entries.size(), 3u * 2u + 6u * 2u);
  const std::string fc = graph::layer_signature(graph, 1), attn = graph::layer_signature(graph, 2);
  for (const int32_t parts : {2, 4}) {
    for (const auto& [signature, kind] : {std::pair{fc, cost::SplitKind::Column}, std::pair{fc, cost::SplitKind::Row},
                                          std::pair{attn, cost::SplitKind::Heads}}) {
      const cost::TensorSplit split{kind, parts};
      const auto* batches = profile.find(signature, split);
      ASSERT_NE(batches, nullptr) << cost::profile_key(signature, split);
      ASSERT_EQ(batches->size(), 2u);
      const cost::ProfileEntry& part = *batches->at(2);
      const cost::ProfileEntry& whole = *profile.find(signature)->at(2);
      SCOPED_TRACE(cost::profile_key(signature, split));
      EXPECT_EQ(part.split, split);
      EXPECT_GT(part.forward.s(), 0);
      EXPECT_GT(part.backward.s(), 0);
      EXPECT_EQ(part.forward_flops_per_sample, whole.forward_flops_per_sample / parts);
      EXPECT_EQ(part.params, cost::part_params(graph, signature == fc ? 1 : 2, split));
      EXPECT_EQ(part.input_bytes_per_sample,
                kind == cost::SplitKind::Row ? whole.input_bytes_per_sample / parts : whole.input_bytes_per_sample);
      EXPECT_EQ(part.output_bytes_per_sample, kind == cost::SplitKind::Column ? whole.output_bytes_per_sample / parts
                                                                              : whole.output_bytes_per_sample);
    }
  }
  EXPECT_EQ(profile.find(fc, cost::TensorSplit{cost::SplitKind::Column, 3}), nullptr);
  // The cost model reads the parts; nothing for a split not profiled.
  const cost::ProfileCostModel model(profile);
  const auto column = model.estimate_tensor(graph, 1, 2, cost::TensorSplit{cost::SplitKind::Column, 4});
  ASSERT_TRUE(column.has_value());
  EXPECT_EQ(column->source, cost::CostSource::Measured);
  const auto* column_entries = profile.find(fc, cost::TensorSplit{cost::SplitKind::Column, 4});
  // The curve is made non-decreasing over batches (ProfileCostModel): the larger of the two.
  EXPECT_EQ(column->time.forward, std::max(column_entries->at(1)->forward, column_entries->at(2)->forward));
  EXPECT_FALSE(model.estimate_tensor(graph, 1, 2, cost::TensorSplit{cost::SplitKind::Column, 8}).has_value());
  // And the file keeps them.
  const cost::Profile reread = cost::profile_from_json_text(cost::profile_to_json_text(profile));
  EXPECT_NE(reread.find(attn, cost::TensorSplit{cost::SplitKind::Heads, 4}), nullptr);
}

TEST_F(ProfileModelTest, ResumeSkipsEntriesAlreadyInTheFile) {
  const Graph graph = tiny_model();
  const std::string file = path("profile.json");
  ProfileStatus last;
  int callbacks = 0;
  ProfileOptions options = quick_options(file);
  options.on_signature = [&](const ProfileStatus& status) {
    last = status;
    ++callbacks;
  };

  // Run 1, batch 1: every signature measured.
  profile_model(graph, {1}, options);
  EXPECT_EQ(callbacks, 3);
  EXPECT_EQ(last.signatures_done, 3u);
  EXPECT_EQ(last.signatures_total, 3u);
  EXPECT_EQ(last.entries_measured, 3);
  EXPECT_EQ(last.entries_reused, 0);
  const cost::Profile first = cost::load_profile_file(file);
  ASSERT_EQ(first.entries.size(), 3u);

  // Run 2, batches 1 and 2: only batch 2 is new; batch 1's entries are kept as they were.
  const cost::Profile second = profile_model(graph, {1, 2}, options);
  EXPECT_EQ(last.entries_measured, 3);
  EXPECT_EQ(last.entries_reused, 3);
  ASSERT_EQ(second.entries.size(), 6u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(second.entries[i].signature, first.entries[i].signature);
    EXPECT_EQ(second.entries[i].forward, first.entries[i].forward);
  }
  EXPECT_EQ(cost::load_profile_file(file).entries.size(), 6u);

  // Run 3: nothing left to measure.
  profile_model(graph, {2, 1}, options);
  EXPECT_EQ(last.entries_measured, 0);
  EXPECT_EQ(last.entries_reused, 6);
}

TEST_F(ProfileModelTest, RefusesAFileFromAnotherDeviceOrThreadCount) {
  const Graph graph = tiny_model();
  const std::string file = path("profile.json");
  profile_model(graph, {1}, quick_options(file));

  ProfileOptions two_threads = quick_options(file);
  two_threads.threads = 2;
  int calls = 0;
  two_threads.on_signature = [&calls](const ProfileStatus&) { ++calls; };
  EXPECT_THROW(profile_model(graph, {1}, two_threads), UserError);
  EXPECT_EQ(calls, 0);

  cost::Profile other;
  other.device = "a100";
  cost::save_profile_file(other, file);
  try {
    profile_model(graph, {1}, quick_options(file));
    FAIL() << "expected UserError";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("a100"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("choose another output file"), std::string::npos);
  }
}

// Co-located: every part is timed while another thread runs the same work on its own copy;
// the entries are complete and the description says so.
TEST_F(ProfileModelTest, CoLocatedMeasuresAgainstContendingCopies) {
  graph::GraphBuilder b("bn");
  auto x = b.input("input", {4, 3, 3});
  x = b.batchnorm2d("bn", x);
  b.linear("fc", b.flatten("flat", x), 5);
  const Graph graph = std::move(b).build();
  ProfileOptions options = quick_options();
  options.co_located = 2;
  const cost::Profile profile = profile_model(graph, {2}, options);
  EXPECT_NE(profile.description.find(", 2 co-located, "), std::string::npos);
  ASSERT_EQ(profile.entries.size(), graph.size());
  for (const cost::ProfileEntry& entry : profile.entries) {
    if (entry.op == "input") continue;
    SCOPED_TRACE(entry.signature);
    EXPECT_GT(entry.forward.s(), 0);
    EXPECT_GT(entry.backward.s(), 0);
  }
  options.co_located = 0;
  EXPECT_THROW(profile_model(graph, {2}, options), UserError);
}

// A BatchNorm2d is also timed as the runtime runs it when split over ranks (synchronised
// statistics); other layers have no split times.
TEST_F(ProfileModelTest, TimesBatchNormsSplitPath) {
  graph::GraphBuilder b("bn");
  auto x = b.input("input", {4, 3, 3});
  x = b.batchnorm2d("bn", x);
  b.relu("relu", x);
  const Graph graph = std::move(b).build();
  const cost::Profile profile = profile_model(graph, {2, 4}, quick_options());
  for (const cost::ProfileEntry& entry : profile.entries) {
    SCOPED_TRACE(entry.signature + " batch " + std::to_string(entry.batch));
    if (entry.op == "batchnorm2d") {
      ASSERT_TRUE(entry.split_forward.has_value());
      ASSERT_TRUE(entry.split_backward.has_value());
      EXPECT_GT(entry.split_forward->s(), 0);
      EXPECT_GT(entry.split_backward->s(), 0);
    } else {
      EXPECT_FALSE(entry.split_forward.has_value());
      EXPECT_FALSE(entry.split_backward.has_value());
    }
  }
}

TEST_F(ProfileModelTest, BadOptionsAndLibtorchFailuresAreUserErrors) {
  const Graph graph = tiny_model();
  EXPECT_THROW(profile_model(graph, {}, quick_options()), UserError);
  EXPECT_THROW(profile_model(graph, {0}, quick_options()), UserError);
  ProfileOptions zero_threads = quick_options();
  zero_threads.threads = 0;
  EXPECT_THROW(profile_model(graph, {1}, zero_threads), UserError);

  // BatchNorm in training mode needs more than one value per channel: [1, 4, 1, 1] fails.
  graph::GraphBuilder b("bn");
  auto x = b.input("input", {4, 1, 1});
  b.batchnorm2d("bn", x);
  const Graph bn = std::move(b).build();
  try {
    profile_model(bn, {1}, quick_options());
    FAIL() << "expected UserError";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("layer 'bn' (batchnorm2d) at batch 1"),
              std::string::npos)
        << error.what();
  }
}

TEST(CpuDescriptionTest, NamesThreadsAndLibtorch) {
  EXPECT_NE(cpu_description(1).find(", 1 thread, libtorch "), std::string::npos);
  EXPECT_NE(cpu_description(4).find(", 4 threads, libtorch "), std::string::npos);
  EXPECT_NE(cpu_description(1, 2).find(", 1 thread, 2 co-located, libtorch "), std::string::npos);
}

}  // namespace
}  // namespace burst::profiler
