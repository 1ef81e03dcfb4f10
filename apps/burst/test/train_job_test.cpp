// Job files (train_job.h): what burst's launcher writes is what each worker reads back, and
// a file that is not a job of this version is refused with one line.
#include "train_job.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "burst/graph/model_json.h"
#include "burst/plan/plan.h"
#include "burst/util/error.h"

namespace burst::cli {
namespace {

runtime::TrainJob sample_job() {
  const graph::Graph graph = graph::load_model("fmnist_cnn");
  runtime::TrainJob job;
  job.config.model = "fmnist_cnn";
  job.config.steps = 7;
  job.config.dataset = "fashion-mnist";
  job.config.optimizer = "adam";
  job.config.learning_rate = 0.002;
  job.config.seed = 18446744073709551615ull;  // the largest seed survives JSON
  job.config.checkpoint_dir = "/tmp/ckpt";
  job.config.resume = true;
  job.config.program.bucket_bytes = 3.5 * 1024 * 1024;
  job.config.program.sync_batchnorm = false;
  job.config.dtype = "float64";
  job.plan = plan::plan_data_parallel(graph, 3, 48);
  job.plan_source = "dp";
  job.resume_from = "/tmp/ckpt/step-4.ckpt";
  return job;
}

TEST(TrainJob, ReadsBackWhatItWrites) {
  const runtime::TrainJob job = sample_job();
  const runtime::TrainJob back = job_from_json(job_to_json(job), "test");
  EXPECT_EQ(job_to_json(back), job_to_json(job));
  EXPECT_EQ(back.config.seed, job.config.seed);
  EXPECT_EQ(back.config.program.bucket_bytes, job.config.program.bucket_bytes);
  EXPECT_FALSE(back.config.program.sync_batchnorm);
  EXPECT_EQ(back.plan.global_batch, 48);  // the global batch lives in the plan
  EXPECT_EQ(plan::plan_to_json_text(back.plan), plan::plan_to_json_text(job.plan));
  EXPECT_EQ(back.resume_from, job.resume_from);
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
  other.erase("plan");
  EXPECT_THROW(job_from_json(other, "test"), UserError);
  EXPECT_THROW(job_from_json(nlohmann::json::array(), "test"), UserError);
}

}  // namespace
}  // namespace burst::cli
