#include "burst/planner/plan_dimensions.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace burst::planner {

PlanDimensions plan_dimensions(const plan::Plan& plan, const program::ProgramOptions& program) {
  PlanDimensions dimensions;
  for (const plan::LayerPlacement& layer : plan.layers) {
    dimensions.tensor = std::max(dimensions.tensor, std::max(1, layer.split.parts));
    if (layer.split.splits() && layer.split.kind == cost::SplitKind::Sequence) dimensions.sequence_parallel = true;
  }
  // Sample groups of the widest split (layers outside it, a 3-D plan's loss, spread their
  // samples over the parts too).
  for (const plan::LayerPlacement& layer : plan.layers) {
    if (std::max(1, layer.split.parts) != dimensions.tensor) continue;
    dimensions.data = std::max(dimensions.data, static_cast<int>(layer.shards.size()) / dimensions.tensor);
  }
  dimensions.context = plan.context_parallel;
  dimensions.experts = plan.expert_parallel;
  dimensions.pipeline = plan.physical_stages();
  dimensions.virtual_stages = plan.pipeline.virtual_stages;
  dimensions.fsdp_shard = program.fsdp_shard;
  dimensions.micro_batches = plan.pipeline.micro_batches;
  dimensions.micro_batch = plan.micro_batch() / dimensions.data;
  dimensions.schedule = plan.pipeline.schedule;
  dimensions.recompute = program.recompute;
  dimensions.zero_stage = program.zero_stage;
  dimensions.precision = program.precision;
  return dimensions;
}

std::string dimensions_text(const PlanDimensions& d) {
  const std::string fsdp = d.fsdp_shard > 0 ? fmt::format(" (FSDP shard {})", d.fsdp_shard) : "";
  const std::string schedule = d.micro_batches > 1 ? fmt::format(", {}", plan::schedule_name(d.schedule)) : "";
  const std::string chunks = d.virtual_stages > 1 ? fmt::format(" (V {})", d.virtual_stages) : "";
  const std::string context = d.context > 1 ? fmt::format(" x CP {}", d.context) : "";
  const std::string experts = d.experts > 1 ? fmt::format(" (EP {})", d.experts) : "";
  return fmt::format("TP {}{}{} x PP {}{} x DP {}{}{}; {} micro-batch{} of {}{}; recompute {}, ZeRO {}, {}", d.tensor,
                     d.sequence_parallel ? " + SP" : "", context, d.pipeline, chunks, d.data, experts, fsdp, d.micro_batches,
                     d.micro_batches == 1 ? "" : "es", d.micro_batch, schedule, cost::recompute_name(d.recompute),
                     d.zero_stage, cost::precision_name(d.precision));
}

nlohmann::json dimensions_json(const PlanDimensions& d) {
  return {{"tensor", d.tensor},
          {"sequence_parallel", d.sequence_parallel},
          {"context", d.context},
          {"experts", d.experts},
          {"pipeline", d.pipeline},
          {"virtual_stages", d.virtual_stages},
          {"data", d.data},
          {"fsdp_shard", d.fsdp_shard},
          {"micro_batches", d.micro_batches},
          {"micro_batch", d.micro_batch},
          {"schedule", plan::schedule_name(d.schedule)},
          {"recompute", cost::recompute_name(d.recompute)},
          {"zero", d.zero_stage},
          {"precision", cost::precision_name(d.precision)}};
}

}  // namespace burst::planner
