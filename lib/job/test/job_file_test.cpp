// Job files (job_file.h): what burst's launcher writes is what each worker reads back, and
// a file that is not a job of this version is refused with one line.
#include "burst/job/job_file.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "burst/graph/model_json.h"
#include "burst/plan/plan.h"
#include "burst/util/error.h"

namespace burst::job {
namespace {

// Every field of the job away from its default, so a field the file dropped or misread
// would come back different.
TrainJob sample_job() {
  const graph::Graph graph = graph::load_model("fmnist_cnn");
  TrainJob job;
  TrainConfig& c = job.config;
  c.model = "fmnist_cnn";
  c.init = "seed";
  c.steps = 7;
  c.epochs = 2;
  c.dataset = "fashion-mnist";
  c.dataset_dir = "/data/fmnist";
  c.val_dataset = "npy:/data/val";
  c.eval_every = 3;
  c.image_mean = {0.5, 0.4};
  c.image_std = {0.2, 0.3};
  c.token_width = "uint32";
  c.synthetic_samples = 96;
  c.optimizer = Optimizer::AdamW;
  c.learning_rate = 0.002;
  c.schedule = {LearningRateKind::step, 2, 7, 1e-4, 3, 0.5};
  c.momentum = 0.9;
  c.weight_decay = 0.01;
  c.seed = 18446744073709551615ull;  // the largest seed survives JSON
  c.save_params = "/tmp/params.pt";
  c.trace_file = "/tmp/trace.json";
  c.log_every = 5;
  c.checkpoint_dir = "/tmp/ckpt";
  c.checkpoint_every = 4;
  c.resume = true;
  c.timeout_s = 12.5;
  c.background_model = "resnet18";
  c.background_batch = 16;
  c.threads = 2;
  c.program.bucket_bytes = 3.5 * 1024 * 1024;
  c.program.first_bucket_bytes = 0.5 * 1024 * 1024;
  c.program.sync_batchnorm = false;
  c.program.precision = cost::Precision::Bf16;
  c.program.recompute = cost::Recompute::Full;
  c.program.zero_stage = 2;
  c.program.clip_grad_norm = 1.5;
  c.program.power_cap_w = 250;
  c.program.fsdp_shard = 2;
  c.dtype = DType::Float64;
  c.device = ComputeDevice::Cuda;
  job.plan = plan::plan_data_parallel(graph, 3, 48);
  job.plan_source = "dp";
  job.resume_from = "/tmp/ckpt/step-4.ckpt";
  return job;
}

// Every key of `sample` (recursively) differs from `defaults`: the sample sets every field.
void expect_every_field_set(const nlohmann::json& sample, const nlohmann::json& defaults, const std::string& path) {
  for (const auto& [key, value] : sample.items()) {
    ASSERT_TRUE(defaults.contains(key)) << path << key;
    if (value.is_object()) {
      expect_every_field_set(value, defaults.at(key), path + key + ".");
    } else {
      EXPECT_NE(value, defaults.at(key)) << "the sample job leaves " << path << key << " at its default";
    }
  }
}

TEST(TrainJob, TheSampleSetsEveryField) {
  const TrainJob job = sample_job();
  TrainJob default_job;
  default_job.plan = job.plan;
  const nlohmann::json sample = job_to_json(job);
  const nlohmann::json defaults = job_to_json(default_job);
  expect_every_field_set(sample.at("config"), defaults.at("config"), "config.");
  EXPECT_EQ(sample.at("config").at("program").at("power_cap_w"), 250);
  EXPECT_EQ(sample.at("config").at("optimizer"), "adamw");
  EXPECT_EQ(sample.at("config").at("program").at("precision"), "bf16");
}

TEST(TrainJob, ReadsBackWhatItWrites) {
  const TrainJob job = sample_job();
  const TrainJob back = job_from_json(job_to_json(job), "test");
  EXPECT_EQ(job_to_json(back), job_to_json(job));
  EXPECT_EQ(back.config.seed, job.config.seed);
  EXPECT_EQ(back.config.program.bucket_bytes, job.config.program.bucket_bytes);
  EXPECT_FALSE(back.config.program.sync_batchnorm);
  EXPECT_EQ(back.plan.global_batch, 48);  // the global batch lives in the plan
  EXPECT_EQ(plan::plan_to_json_text(back.plan), plan::plan_to_json_text(job.plan));
  EXPECT_EQ(back.resume_from, job.resume_from);
  EXPECT_EQ(back.config.program.power_cap_w, 250);
  EXPECT_EQ(back.config.optimizer, Optimizer::AdamW);
  EXPECT_EQ(back.config.device, ComputeDevice::Cuda);
  EXPECT_EQ(back.config.schedule.kind, LearningRateKind::step);
}

TEST(TrainJob, RefusesWhatIsNotAJobOfThisVersion) {
  nlohmann::json job = job_to_json(sample_job());
  nlohmann::json other = job;
  other["format"] = "burst-plan";
  EXPECT_THROW(job_from_json(other, "test"), UserError);
  other = job;
  other["version"] = kJobVersion + 1;
  EXPECT_THROW(job_from_json(other, "test"), UserError);
  other = job;
  other["config"].erase("steps");
  EXPECT_THROW(job_from_json(other, "test"), UserError);
  other = job;
  other["config"]["steps"] = "seven";
  EXPECT_THROW(job_from_json(other, "test"), UserError);
  other = job;
  other["version"] = "1";
  EXPECT_THROW(job_from_json(other, "test"), UserError);
  other = job;
  other["format"] = 7;
  EXPECT_THROW(job_from_json(other, "test"), UserError);
  other = job;
  other["config"]["optimizer"] = "lamb";
  EXPECT_THROW(job_from_json(other, "test"), UserError);
  other = job;
  other["config"]["program"].erase("power_cap_w");
  EXPECT_THROW(job_from_json(other, "test"), UserError);
  other = job;
  other.erase("plan");
  EXPECT_THROW(job_from_json(other, "test"), UserError);
  EXPECT_THROW(job_from_json(nlohmann::json::array(), "test"), UserError);
}

}  // namespace
}  // namespace burst::job
