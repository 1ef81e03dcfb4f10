#pragma once
// Job files: the job `burst train` resolved (TrainJob: the plan, the run's configuration,
// the checkpoint it resumes from), as burst's launcher hands it to its workers: each reads it
// once (`burst train --job FILE`). docs/runtime.md, "Job files". libtorch-free.
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "burst/job/train_config.h"

namespace burst::job {

inline constexpr const char* kJobFormat = "burst-train-job";
// 2: TrainConfig::device; 3: precision, recompute, ZeRO; 4: the power cap.
inline constexpr int kJobVersion = 5;

nlohmann::json job_to_json(const TrainJob& job);
// UserError naming the file and what is wrong (format, version, a missing or mistyped
// field, an unknown name, a malformed plan). The background command is not part of a job:
// the reader sets it.
TrainJob job_from_json(const nlohmann::json& j, const std::string& where);

void write_job_file(const TrainJob& job, const std::string& path);
TrainJob read_job_file(const std::string& path);

}  // namespace burst::job
