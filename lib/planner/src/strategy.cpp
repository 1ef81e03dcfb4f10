#include "burst/planner/strategy.h"

#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace burst::planner {
namespace {

// The dimensions a strategy's plans have, beyond the batch split every plan has.
struct Dimensions {
  bool tensor = false;       // layers split beyond the batch into a pinned number of parts
  bool stages = false;       // pipeline stages, with a schedule
  bool micro_batch = false;  // a pinned micro-batch size
};

Dimensions dimensions_of(Strategy strategy) {
  switch (strategy) {
    case Strategy::DataParallel:
    case Strategy::Burst: return {};
    case Strategy::Pipeline:
    case Strategy::Hybrid: return {false, true, false};
    case Strategy::Tensor: return {true, false, false};
    case Strategy::ThreeD:
    case Strategy::Auto: return {true, true, true};
  }
  return {};
}

// The strategies (Auto aside) that have the dimension `has` picks.
std::vector<std::string> taking(bool Dimensions::*has) {
  std::vector<std::string> names;
  for (const auto& entry : kStrategyNames.entries) {
    if (entry.value != Strategy::Auto && dimensions_of(entry.value).*has) names.emplace_back(entry.name);
  }
  names.emplace_back("auto");
  return names;
}

std::string refusal(Strategy strategy, const std::string& pin, const char* lacks, bool Dimensions::*has) {
  return fmt::format("{}: --strategy {} {}; the strategies that take it: {}", pin, strategy_name(strategy), lacks,
                     fmt::join(taking(has), ", "));
}

}  // namespace

std::string pins_refusal(Strategy strategy, const ShapePins& pins) {
  const Dimensions has = dimensions_of(strategy);
  if (pins.tensor && *pins.tensor > 1 && !has.tensor) {
    return refusal(strategy, fmt::format("--tensor-parallel {}", *pins.tensor), "splits no layer's tensors",
                   &Dimensions::tensor);
  }
  if (pins.sequence_parallel.value_or(false) && !has.tensor) {
    return refusal(strategy, "--sequence-parallel", "splits no layer's tensors", &Dimensions::tensor);
  }
  if (pins.pipeline && *pins.pipeline > 1 && !has.stages) {
    return refusal(strategy, fmt::format("--pipeline-stages {}", *pins.pipeline), "makes no pipeline stages",
                   &Dimensions::stages);
  }
  if (pins.schedule && !has.stages) {
    return refusal(strategy, fmt::format("--schedule {}", plan::schedule_name(*pins.schedule)),
                   "makes no pipeline stages", &Dimensions::stages);
  }
  const bool interleaved = (pins.schedule && *pins.schedule == plan::Schedule::Interleaved) || pins.virtual_stages;
  if (interleaved && strategy != Strategy::ThreeD && strategy != Strategy::Auto) {
    return fmt::format("--schedule interleaved: --strategy {} does not interleave its stages; the strategies that "
                       "take it: 3d, auto",
                       strategy_name(strategy));
  }
  if (pins.schedule && *pins.schedule == plan::Schedule::ZeroBubbleH1 && strategy != Strategy::ThreeD &&
      strategy != Strategy::Auto) {
    return fmt::format("--schedule zb-h1: --strategy {} does not split its backwards; the strategies that take it: 3d, "
                       "auto",
                       strategy_name(strategy));
  }
  if (pins.context_parallel && *pins.context_parallel > 1 && strategy != Strategy::ThreeD && strategy != Strategy::Auto) {
    return fmt::format("--context-parallel {}: --strategy {} does not split a sample's tokens; the strategies that "
                       "take it: 3d, auto",
                       *pins.context_parallel, strategy_name(strategy));
  }
  if (pins.expert_parallel && *pins.expert_parallel > 1 && strategy != Strategy::ThreeD && strategy != Strategy::Auto) {
    return fmt::format("--expert-parallel {}: --strategy {} does not spread experts; the strategies that take it: 3d, "
                       "auto",
                       *pins.expert_parallel, strategy_name(strategy));
  }
  if (pins.micro_batch && !has.micro_batch) {
    return refusal(strategy, fmt::format("--micro-batch-size {}", *pins.micro_batch),
                   "chooses no micro-batch size of its own", &Dimensions::micro_batch);
  }
  return "";
}

}  // namespace burst::planner
