#pragma once
// What `burst plan --sweep` prints for a language model: per GPU count the best plan, its
// tokens/s and MFU per GPU, peak memory and GPU-hours per billion tokens (docs/llm.md).
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "burst/planner/gpu_count_sweep.h"

namespace burst::cli {

struct GpuSweepReport {
  std::string model;
  std::string device_kind;
  int64_t global_batch = 0;
  int64_t tokens_per_sample = 0;
  std::vector<planner::GpuCountPoint> points;
};

void print_gpu_sweep_report(const GpuSweepReport& report, std::ostream& out);
// {model, device, global_batch, tokens_per_sample, points: [{devices, fits, why_not, plan,
// iteration_time_ms, tokens_per_s_per_device, model_tflop_s_per_device, mfu,
// peak_memory_bytes, gpu_hours_per_billion_tokens}]}
nlohmann::json gpu_sweep_report_json(const GpuSweepReport& report);

}  // namespace burst::cli
