#pragma once
// Which checkpoint `burst train --resume` continues from, checked against the run once,
// when the job is resolved (before any worker starts: a bad checkpoint is refused before
// anything runs); the job names it to the workers (TrainJob::resume_from). Header-only and
// libtorch-free.
#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/checkpoint/checkpoint_file.h"
#include "burst/graph/graph.h"
#include "burst/job/train_config.h"
#include "burst/util/error.h"

namespace burst::job {

// What a checkpoint records besides tensors, and what must match to resume from it: the
// training these steps belong to. Another plan or world size is fine (the global batch is
// fixed, so the steps compute the same training); another batch, seed, dataset or optimizer
// is not.
inline nlohmann::json training_identity(const TrainConfig& config, int64_t global_batch) {
  nlohmann::json identity = {{"global_batch", global_batch},
          {"seed", config.seed},
          {"dataset", config.dataset},
          {"synthetic_samples", config.dataset == "synthetic" ? config.synthetic_samples : 0},
          {"optimizer",
           {{"kind", kOptimizerNames.name(config.optimizer)},
            {"learning_rate", config.learning_rate},
            {"momentum", config.momentum},
            {"weight_decay", config.weight_decay}}}};
  // Only where it is not the default, so that checkpoints from before --dtype and
  // --lr-schedule still resume.
  if (config.dtype != DType::Float32) identity["dtype"] = kDTypeNames.name(config.dtype);
  const LearningRateSchedule& schedule = config.schedule;
  if (schedule.kind != LearningRateSchedule{}.kind || schedule.warmup_steps > 0) {
    identity["optimizer"]["schedule"] = {{"kind", learning_rate_kind_name(schedule.kind)},
                                         {"warmup_steps", schedule.warmup_steps},
                                         {"min_learning_rate", schedule.min_learning_rate},
                                         {"step_size", schedule.step_size},
                                         {"gamma", schedule.gamma}};
  }
  return identity;
}

// The path of the latest checkpoint in config.checkpoint_dir, read and checked (format,
// checksums, model, training identity, and step <= `steps` when steps > 0); nullopt
// without --resume. UserError with the reason otherwise.
inline std::optional<std::string> checkpoint_to_resume(const TrainConfig& config, const graph::Graph& graph,
                                                       int64_t global_batch, int64_t steps) {
  if (!config.resume) return std::nullopt;
  const std::optional<std::string> path = checkpoint::latest_checkpoint(config.checkpoint_dir);
  if (!path) throw UserError(fmt::format("--resume: no checkpoint in '{}'", config.checkpoint_dir));
  checkpoint::Checkpoint found = checkpoint::read_checkpoint_file(*path);
  checkpoint::check_checkpoint_model(found, graph, *path);
  const nlohmann::json expected = training_identity(config, global_batch);
  const nlohmann::json recorded = found.state.value("training", nlohmann::json());
  if (recorded != expected) {
    throw UserError(fmt::format("checkpoint '{}' belongs to another training ({}), not this one ({})", *path,
                                recorded.dump(), expected.dump()));
  }
  if (steps > 0 && found.step > steps) {
    throw UserError(fmt::format("checkpoint '{}' is at step {}, past this run's {} steps", *path, found.step, steps));
  }
  return path;
}

}  // namespace burst::job
