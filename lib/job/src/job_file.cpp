#include "burst/job/job_file.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/plan/plan.h"
#include "burst/util/error.h"
#include "burst/util/json_io.h"

// One field list each, for writing and for reading alike (nlohmann's macros: reading needs
// every field, and refuses a field of the wrong type). Enums are written by their names in
// their own tables (EnumNames). The background command is not a field: the worker's own
// program sets it.
#define BURST_ENUM_JSON(Enum, names)                                                               \
  inline void to_json(nlohmann::json& j, Enum value) { j = (names).name(value); }                 \
  inline void from_json(const nlohmann::json& j, Enum& value) { value = (names).parse(j.get<std::string>()); }

namespace burst::cost {
BURST_ENUM_JSON(Precision, kPrecisionNames)
BURST_ENUM_JSON(Recompute, kRecomputeNames)
}  // namespace burst::cost
namespace burst::program {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ProgramOptions, bucket_bytes, first_bucket_bytes, sync_batchnorm, precision,
                                   recompute, zero_stage, fsdp_shard, clip_grad_norm, power_cap_w)
}  // namespace burst::program

namespace burst::job {
BURST_ENUM_JSON(LearningRateKind, kLearningRateKindNames)
BURST_ENUM_JSON(Optimizer, kOptimizerNames)
BURST_ENUM_JSON(DType, kDTypeNames)
BURST_ENUM_JSON(ComputeDevice, kComputeDeviceNames)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LearningRateSchedule, kind, warmup_steps, total_steps, min_learning_rate, step_size,
                                   gamma)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TrainConfig, model, init, steps, epochs, dataset, dataset_dir, val_dataset, eval_every,
                                   image_mean, image_std, token_width, synthetic_samples,
                                   optimizer, learning_rate, schedule, momentum, weight_decay, seed, save_params, trace_file,
                                   log_every, checkpoint_dir, checkpoint_every, resume, timeout_s, background_model,
                                   background_batch, threads, program, dtype, device)
}  // namespace burst::job
#undef BURST_ENUM_JSON

namespace burst::job {

nlohmann::json job_to_json(const TrainJob& job) {
  return {{"format", kJobFormat},
          {"version", kJobVersion},
          {"plan_source", job.plan_source},
          {"resume_from", job.resume_from},
          {"config", job.config},
          {"plan", nlohmann::json::parse(plan::plan_to_json_text(job.plan))}};
}

TrainJob job_from_json(const nlohmann::json& j, const std::string& where) {
  const bool job = j.is_object() && j.contains("format") && j.at("format") == kJobFormat;
  if (!job) throw UserError(fmt::format("{} is not a burst job file (no \"format\": \"{}\")", where, kJobFormat));
  if (!j.contains("version") || j.at("version") != kJobVersion) {
    throw UserError(fmt::format("{} is a job file of version {}; this burst reads version {}", where,
                                j.contains("version") ? j.at("version").dump() : "(none)", kJobVersion));
  }
  TrainJob resolved;
  try {
    j.at("config").get_to(resolved.config);
    j.at("plan_source").get_to(resolved.plan_source);
    j.at("resume_from").get_to(resolved.resume_from);
  } catch (const nlohmann::json::exception& error) {
    throw UserError(fmt::format("{}: {}", where, error.what()));
  } catch (const UserError& error) {  // an unknown name (EnumNames::parse)
    throw UserError(fmt::format("{}: {}", where, error.what()));
  }
  if (!j.contains("plan")) throw UserError(fmt::format("{} holds no plan", where));
  resolved.plan = plan::plan_from_json_text(j.at("plan").dump());
  return resolved;
}

void write_job_file(const TrainJob& job, const std::string& path) {
  write_text_file_atomically(path, job_to_json(job).dump(2) + "\n");
}

TrainJob read_job_file(const std::string& path) {
  const std::string where = fmt::format("job file '{}'", path);
  return job_from_json(parse_json_text(read_text_file(path, "job file")), where);
}

}  // namespace burst::job
