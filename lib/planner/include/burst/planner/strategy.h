#pragma once
// The strategies a plan can be made by (docs/planner.md), their names (one table, which the
// command line's --strategy and the plan file's "strategy" share), and which of the user's
// pins (ShapePins) each can take.
#include <cstdint>
#include <string>

#include "burst/planner/three_d_planner.h"
#include "burst/util/enum_names.h"

namespace burst::planner {

enum class Strategy : uint8_t {
  DataParallel,  // every layer on every device
  Burst,         // every layer on its own number of devices (burst_planner.h)
  Pipeline,      // data-parallel stages and micro-batches (pipeline_planner.h)
  Hybrid,        // burst placements inside pipeline stages
  Tensor,        // Megatron-style tensor splits beyond the batch (tensor_planner.h)
  ThreeD,        // tensor x pipeline x data, micro-batch size, ZeRO, recomputation (three_d_planner.h)
  Auto,          // each of those that can take the pins, evaluated; the fastest that fits
};
inline constexpr EnumNames<Strategy, 7> kStrategyNames{
    "strategy",
    {{{Strategy::DataParallel, "dp"}, {Strategy::Burst, "burst"}, {Strategy::Pipeline, "pipeline"},
      {Strategy::Hybrid, "hybrid"}, {Strategy::Tensor, "tensor"}, {Strategy::ThreeD, "3d"}, {Strategy::Auto, "auto"}}}};

inline const char* strategy_name(Strategy strategy) { return kStrategyNames.name(strategy); }
inline Strategy parse_strategy(const std::string& word) { return kStrategyNames.parse(word); }

// Why `strategy` cannot take `pins`, in one line naming the pin, its value and the
// strategies that can take it; empty when it can (Auto: always). Recomputation and ZeRO
// pins shape the step of every strategy; a tensor or pipeline pin of 1 is what the
// strategies without that dimension already do.
std::string pins_refusal(Strategy strategy, const ShapePins& pins);

}  // namespace burst::planner
