#include "train_job.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/plan/plan.h"
#include "burst/util/error.h"
#include "burst/util/json_io.h"

// One field list each, for writing and for reading alike (nlohmann's macros: reading needs
// every field, and refuses a field of the wrong type). The background command is not a
// field: the worker's own program sets it.
namespace burst::cost {
NLOHMANN_JSON_SERIALIZE_ENUM(Precision, {{Precision::Fp32, "fp32"}, {Precision::Tf32, "tf32"}, {Precision::Bf16, "bf16"},
                                         {Precision::Fp16, "fp16"}, {Precision::Fp8, "fp8"}})
NLOHMANN_JSON_SERIALIZE_ENUM(Recompute, {{Recompute::None, "none"}, {Recompute::Selective, "selective"},
                                         {Recompute::Full, "full"}})
}  // namespace burst::cost
namespace burst::program {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ProgramOptions, bucket_bytes, first_bucket_bytes, sync_batchnorm, precision,
                                   recompute, zero_stage, clip_grad_norm)
}  // namespace burst::program

namespace burst::runtime {
NLOHMANN_JSON_SERIALIZE_ENUM(LearningRateKind, {{LearningRateKind::constant, "constant"},
                                                {LearningRateKind::cosine, "cosine"},
                                                {LearningRateKind::linear, "linear"},
                                                {LearningRateKind::step, "step"}})
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LearningRateSchedule, kind, warmup_steps, total_steps, min_learning_rate, step_size,
                                   gamma)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TrainConfig, model, init, steps, epochs, dataset, dataset_dir, val_dataset, eval_every,
                                   image_mean, image_std, token_width, synthetic_samples,
                                   optimizer, learning_rate, schedule, momentum, weight_decay, seed, save_params, trace_file,
                                   log_every, checkpoint_dir, checkpoint_every, resume, timeout_s, background_model,
                                   background_batch, threads, program, dtype, device)
}  // namespace burst::runtime

namespace burst::cli {

nlohmann::json job_to_json(const runtime::TrainJob& job) {
  return {{"format", kJobFormat},
          {"version", kJobVersion},
          {"plan_source", job.plan_source},
          {"resume_from", job.resume_from},
          {"config", job.config},
          {"plan", nlohmann::json::parse(plan::plan_to_json_text(job.plan))}};
}

runtime::TrainJob job_from_json(const nlohmann::json& j, const std::string& where) {
  const bool job = j.is_object() && j.contains("format") && j.at("format") == kJobFormat;
  if (!job) throw UserError(fmt::format("{} is not a burst job file (no \"format\": \"{}\")", where, kJobFormat));
  if (!j.contains("version") || j.at("version") != kJobVersion) {
    throw UserError(fmt::format("{} is a job file of version {}; this burst reads version {}", where,
                                j.contains("version") ? j.at("version").dump() : "(none)", kJobVersion));
  }
  runtime::TrainJob resolved;
  try {
    j.at("config").get_to(resolved.config);
    j.at("plan_source").get_to(resolved.plan_source);
    j.at("resume_from").get_to(resolved.resume_from);
  } catch (const nlohmann::json::exception& error) {
    throw UserError(fmt::format("{}: {}", where, error.what()));
  }
  if (!j.contains("plan")) throw UserError(fmt::format("{} holds no plan", where));
  resolved.plan = plan::plan_from_json_text(j.at("plan").dump());
  return resolved;
}

void write_job_file(const runtime::TrainJob& job, const std::string& path) {
  write_text_file_atomically(path, job_to_json(job).dump(2) + "\n");
}

runtime::TrainJob read_job_file(const std::string& path) {
  const std::string where = fmt::format("job file '{}'", path);
  return job_from_json(parse_json_text(read_text_file(path, "job file")), where);
}

}  // namespace burst::cli
