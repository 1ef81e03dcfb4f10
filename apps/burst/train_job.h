#pragma once
// Job files: the job `burst train` resolved (runtime::TrainJob: the plan, the run's
// configuration, the checkpoint it resumes from), as burst's launcher hands it to its
// workers: each reads it once (`burst train --job FILE`). docs/runtime.md, "Job files".
// libtorch-free.
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "burst/runtime/train.h"

namespace burst::cli {

inline constexpr const char* kJobFormat = "burst-train-job";
inline constexpr int kJobVersion = 3;  // 2: TrainConfig::device; 3: precision, recompute, ZeRO

nlohmann::json job_to_json(const runtime::TrainJob& job);
// UserError naming the file and what is wrong (format, version, a missing or mistyped
// field, a malformed plan). The background command is not part of a job: the reader sets it.
runtime::TrainJob job_from_json(const nlohmann::json& j, const std::string& where);

void write_job_file(const runtime::TrainJob& job, const std::string& path);
runtime::TrainJob read_job_file(const std::string& path);

}  // namespace burst::cli
