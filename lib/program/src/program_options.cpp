#include "burst/program/program_options.h"

#include <cmath>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::program {

void check_program_options(const ProgramOptions& options) {
  if (!(options.bucket_bytes > 0) || !std::isfinite(options.bucket_bytes)) {
    throw UserError(fmt::format("the gradient bucket size must be a positive number of MiB, got {} MiB",
                                options.bucket_bytes / kBytesPerMiB));
  }
  if (!(options.first_bucket_bytes > 0) || !std::isfinite(options.first_bucket_bytes)) {
    throw UserError(fmt::format("the first gradient bucket's size must be a positive number of bytes, got {}",
                                options.first_bucket_bytes));
  }
  if (options.zero_stage < 0 || options.zero_stage > kMaxZeroStage) {
    throw UserError(fmt::format("the ZeRO stage must be 0, 1, 2 or 3, got {}", options.zero_stage));
  }
  if (options.fsdp_shard < 0) throw UserError(fmt::format("--fsdp-shard must be positive, got {}", options.fsdp_shard));
  if (options.fsdp_shard > 0 && options.zero_stage != 3) {
    throw UserError(fmt::format("--fsdp-shard {} shards weights within groups as ZeRO 3 does: give --zero 3 (got ZeRO {})",
                                options.fsdp_shard, options.zero_stage));
  }
  if (!(options.clip_grad_norm >= 0) || !std::isfinite(options.clip_grad_norm)) {
    throw UserError(fmt::format("--clip-grad-norm must be a finite number > 0 (or 0: no clipping), got {}",
                                options.clip_grad_norm));
  }
  if (!(options.moe_imbalance >= 1) || !std::isfinite(options.moe_imbalance)) {
    throw UserError(fmt::format("--moe-imbalance is the busiest expert rank's tokens over the mean: a finite number of "
                                "at least 1, got {}",
                                options.moe_imbalance));
  }
  if (!(options.power_cap_w >= 0) || !std::isfinite(options.power_cap_w)) {
    throw UserError(fmt::format("--power-cap must be a number of watts > 0 (or 0: none), got {}", options.power_cap_w));
  }
}

const char* batchnorm_mode_name(const ProgramOptions& options) { return options.sync_batchnorm ? "sync" : "local"; }

void set_batchnorm_mode(ProgramOptions& options, const std::string& mode) {
  if (mode != "sync" && mode != "local") {
    throw UserError(fmt::format("the BatchNorm mode must be sync or local, got '{}'", mode));
  }
  options.sync_batchnorm = mode == "sync";
}

}  // namespace burst::program
