#include "burst/cluster_sim/application_tables.h"

#include <gtest/gtest.h>

#include "burst/cluster_sim/job_model.h"
#include "burst/util/error.h"

namespace burst::cluster_sim {
namespace application_tables_test {

// A small application: two placements measured, one spread row from scalability.csv.
ApplicationTables tiny() {
  return parse_application_tables(
      {{"toy/placements.csv",
        "placement,local_bsz,step_time,sync_time\n1,10,1.0,0.0\n1,20,2.0,0.0\n22,10,1.5,0.5\n22,20,2.5,0.5\n"},
       {"toy/scalability.csv", "num_nodes,num_replicas,local_bsz,step_time,sync_time\n6,6,10,3.0,1.0\n6,12,10,5.0,2.0\n"},
       {"toy/validation-10.csv", "progress,iteration,metric,grad_sqr,grad_var\n100,100,0.1,1,3\n200,200,0.2,1,1\n"},
       {"toy/validation-40.csv", "progress,iteration,metric,grad_sqr,grad_var\n90,40,0.1,1,1\n210,80,0.2,1,1\n"}},
      "mem");
}

TEST(ApplicationTables, MeasuredPlacementsInterpolateInTheBatch) {
  const ApplicationTables apps = tiny();
  const ApplicationTable& toy = apps.at("toy");
  EXPECT_DOUBLE_EQ(toy.step_time({1}, 15).step_s, 1.5);
  EXPECT_DOUBLE_EQ(toy.step_time({2, 2}, 15).step_s, 2.0);
  EXPECT_DOUBLE_EQ(toy.step_time({1}, 40).step_s, 2.0);  // beyond the measured batches: the last
}

// Unmeasured: 6 nodes x 1.5 GPUs per node lies halfway between (6, 6) and (6, 12).
TEST(ApplicationTables, UnmeasuredPlacementsInterpolateInNodesAndGpusPerNode) {
  const ApplicationTables apps = tiny();
  const StepTime time = apps.at("toy").step_time({1, 1, 1, 2, 2, 2}, 10);
  EXPECT_DOUBLE_EQ(time.step_s, 4.0);
  EXPECT_DOUBLE_EQ(time.sync_s, 1.5);
  // 4 nodes x 1 GPU per node: halfway between the 2-node row (only 2 GPUs per node measured:
  // 1.5, held beyond) and the 6-node row at 1 GPU per node (3.0).
  EXPECT_DOUBLE_EQ(apps.at("toy").step_time({1, 1, 1, 1}, 10).step_s, 2.25);
}

// Epoch ends: the least progress of any validated batch; gain 1 at the smallest batch, and at
// 40 (scale 4) with grad_var 1, grad_sqr 1 in epoch 1: 2 / (1/4 + 1) = 1.6.
TEST(ApplicationTables, EpochsAndGainFollowTheValidationFiles) {
  const ApplicationTables apps = tiny();
  const ApplicationTable& toy = apps.at("toy");
  EXPECT_EQ(toy.max_epochs, 2);
  EXPECT_EQ(toy.epoch_end, (std::vector<double>{0, 90, 200}));
  EXPECT_DOUBLE_EQ(toy.gain(10, 0), 1);
  EXPECT_DOUBLE_EQ(toy.gain(40, 1), 1.6);
  // Halfway at 25: grad_var (3 + 1) / 2 = 2 in epoch 0, scale 2.5: (2 + 1) / (2 / 2.5 + 1).
  EXPECT_DOUBLE_EQ(toy.gain(25, 0), 3 / 1.8);
}

// The published simulator's split: yolov3 accumulates above 8 samples per GPU, and one
// replica at more than the smallest batch always takes two micro-steps.
TEST(ApplicationTables, LocalBatchesSplitAsPublished) {
  const ApplicationTable& yolo = builtin_application_tables().at("yolov3");
  const LocalBatch split = yolo.local_batch(64, 4);
  EXPECT_EQ(split.accumulation, 1);
  EXPECT_EQ(split.micro_batch, 8);
  EXPECT_EQ(split.global_batch, 64);
  const ApplicationTable& ncf = builtin_application_tables().at("ncf");
  const LocalBatch one = ncf.local_batch(32768, 1);
  EXPECT_EQ(one.accumulation, 1);
  EXPECT_EQ(one.micro_batch, 16384);
}

TEST(ApplicationTables, BuiltInCopyIsTheShippedFolder) {
  const ApplicationTables read = read_application_tables(BURST_POLLUX_DIR "/applications");
  const ApplicationTables& builtin = builtin_application_tables();
  ASSERT_EQ(read.size(), 6u);
  ASSERT_EQ(builtin.size(), 6u);
  for (const auto& [name, table] : read) {
    EXPECT_EQ(builtin.at(name).epoch_end, table.epoch_end) << name;
    EXPECT_EQ(builtin.at(name).step_time({4, 2}, 16).step_s, table.step_time({4, 2}, 16).step_s) << name;
  }
  EXPECT_EQ(builtin.at("cifar10").max_epochs, 100);
  EXPECT_EQ(builtin.at("yolov3").max_local_batch, 8);
}

TEST(ApplicationTables, MalformedTablesNameTheFileAndLine) {
  try {
    parse_application_tables({{"toy/placements.csv", "placement,local_bsz,step_time,sync_time\n1x,10,1.0,0.0\n"}}, "dir");
    FAIL();
  } catch (const UserError& error) {
    EXPECT_EQ(std::string(error.what()), "dir/toy/placements.csv:2: placement must be digits 1-9 (GPUs on each node), got '1x'");
  }
  try {
    read_application_tables("/nonexistent");
    FAIL();
  } catch (const UserError& error) {
    EXPECT_EQ(std::string(error.what()), "'/nonexistent' is not a folder");
  }
}

}  // namespace application_tables_test
}  // namespace burst::cluster_sim
