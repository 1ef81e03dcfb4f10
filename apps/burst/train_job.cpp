#include "train_job.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/plan/plan.h"
#include "burst/util/error.h"
#include "burst/util/json_io.h"

namespace burst::cli {
namespace {

nlohmann::json program_json(const program::ProgramOptions& options) {
  return {{"bucket_bytes", options.bucket_bytes},
          {"first_bucket_bytes", options.first_bucket_bytes},
          {"sync_batchnorm", options.sync_batchnorm}};
}

program::ProgramOptions program_from_json(const nlohmann::json& j) {
  program::ProgramOptions options;
  j.at("bucket_bytes").get_to(options.bucket_bytes);
  j.at("first_bucket_bytes").get_to(options.first_bucket_bytes);
  j.at("sync_batchnorm").get_to(options.sync_batchnorm);
  return options;
}

nlohmann::json config_json(const runtime::TrainConfig& c) {
  return {{"model", c.model},
          {"init", c.init},
          {"steps", c.steps},
          {"epochs", c.epochs},
          {"dataset", c.dataset},
          {"dataset_dir", c.dataset_dir},
          {"synthetic_samples", c.synthetic_samples},
          {"optimizer", c.optimizer},
          {"learning_rate", c.learning_rate},
          {"momentum", c.momentum},
          {"weight_decay", c.weight_decay},
          {"seed", c.seed},
          {"save_params", c.save_params},
          {"trace_file", c.trace_file},
          {"log_every", c.log_every},
          {"checkpoint_dir", c.checkpoint_dir},
          {"checkpoint_every", c.checkpoint_every},
          {"resume", c.resume},
          {"timeout_s", c.timeout_s},
          {"background_model", c.background_model},
          {"background_batch", c.background_batch},
          {"threads", c.threads},
          {"program", program_json(c.program)},
          {"dtype", c.dtype}};
}

runtime::TrainConfig config_from_json(const nlohmann::json& j) {
  runtime::TrainConfig c;
  j.at("model").get_to(c.model);
  j.at("init").get_to(c.init);
  j.at("steps").get_to(c.steps);
  j.at("epochs").get_to(c.epochs);
  j.at("dataset").get_to(c.dataset);
  j.at("dataset_dir").get_to(c.dataset_dir);
  j.at("synthetic_samples").get_to(c.synthetic_samples);
  j.at("optimizer").get_to(c.optimizer);
  j.at("learning_rate").get_to(c.learning_rate);
  j.at("momentum").get_to(c.momentum);
  j.at("weight_decay").get_to(c.weight_decay);
  j.at("seed").get_to(c.seed);
  j.at("save_params").get_to(c.save_params);
  j.at("trace_file").get_to(c.trace_file);
  j.at("log_every").get_to(c.log_every);
  j.at("checkpoint_dir").get_to(c.checkpoint_dir);
  j.at("checkpoint_every").get_to(c.checkpoint_every);
  j.at("resume").get_to(c.resume);
  j.at("timeout_s").get_to(c.timeout_s);
  j.at("background_model").get_to(c.background_model);
  j.at("background_batch").get_to(c.background_batch);
  j.at("threads").get_to(c.threads);
  c.program = program_from_json(j.at("program"));
  j.at("dtype").get_to(c.dtype);
  return c;
}

}  // namespace

nlohmann::json job_to_json(const runtime::TrainJob& job) {
  return {{"format", kJobFormat},
          {"version", kJobVersion},
          {"plan_source", job.plan_source},
          {"resume_from", job.resume_from},
          {"config", config_json(job.config)},
          {"plan", nlohmann::json::parse(plan::plan_to_json_text(job.plan))}};
}

runtime::TrainJob job_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || j.value("format", "") != kJobFormat) {
    throw UserError(fmt::format("{} is not a burst job file (no \"format\": \"{}\")", where, kJobFormat));
  }
  if (j.value("version", 0) != kJobVersion) {
    throw UserError(fmt::format("{} is a job file of version {}; this burst reads version {}", where,
                                j.value("version", 0), kJobVersion));
  }
  runtime::TrainJob job;
  try {
    job.config = config_from_json(j.at("config"));
    j.at("plan_source").get_to(job.plan_source);
    j.at("resume_from").get_to(job.resume_from);
  } catch (const nlohmann::json::exception& error) {
    throw UserError(fmt::format("{}: {}", where, error.what()));
  }
  if (!j.contains("plan")) throw UserError(fmt::format("{} holds no plan", where));
  job.plan = plan::plan_from_json_text(j.at("plan").dump());
  return job;
}

void write_job_file(const runtime::TrainJob& job, const std::string& path) {
  write_text_file_atomically(path, job_to_json(job).dump(2) + "\n");
}

runtime::TrainJob read_job_file(const std::string& path) {
  const std::string where = fmt::format("job file '{}'", path);
  return job_from_json(parse_json_text(read_text_file(path, "job file")), where);
}

}  // namespace burst::cli
