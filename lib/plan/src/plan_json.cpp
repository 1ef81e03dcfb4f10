#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/plan/plan.h"
#include "burst/util/error.h"
#include "burst/util/json_io.h"

namespace burst::plan {

using nlohmann::json;

namespace {

// The "pipeline" entry and its line break, or nothing for one micro-batch and one stage.
std::string pipeline_json_text(const Plan& plan) {
  const Pipeline& pipeline = plan.pipeline;
  if (pipeline.micro_batches == 1 && pipeline.stage_starts.empty()) return "";
  json starts = json::array();
  for (const graph::LayerId start : pipeline.stage_starts) {
    starts.push_back(plan.layers.at(static_cast<size_t>(start)).layer);
  }
  json entry = {{"micro_batches", pipeline.micro_batches},
                {"schedule", schedule_name(pipeline.schedule)},
                {"stage_starts", std::move(starts)}};
  if (pipeline.virtual_stages > 1) entry["virtual_stages"] = pipeline.virtual_stages;
  return fmt::format("  \"pipeline\": {},\n", entry.dump());
}

// Version 2's "pipeline": stage starts by layer name, resolved against the plan's layers.
Pipeline pipeline_from_json(const json& value, const Plan& plan) {
  JsonObjectReader reader(value, "plan pipeline");
  Pipeline pipeline;
  pipeline.micro_batches = reader.get_int("micro_batches");
  pipeline.schedule = schedule_from_name(reader.get_string("schedule", "1f1b"));
  pipeline.virtual_stages = static_cast<int>(reader.get_int("virtual_stages", 1));
  const json* starts = reader.find("stage_starts");
  reader.reject_unknown_keys();
  if (starts == nullptr) return pipeline;
  if (!starts->is_array()) reader.fail("stage_starts", "must be a list of layer names");
  for (const json& name : *starts) {
    const std::string layer = reader.as_string("stage_starts", name);
    const auto found = std::find_if(plan.layers.begin(), plan.layers.end(),
                                    [&](const LayerPlacement& placement) { return placement.layer == layer; });
    if (found == plan.layers.end()) reader.fail("stage_starts", fmt::format("names '{}', which is not a layer of the plan", layer));
    pipeline.stage_starts.push_back(static_cast<graph::LayerId>(found - plan.layers.begin()));
  }
  return pipeline;
}

}  // namespace

// Each shard is written as [rank, begin, end]: compact for plans of thousands of ranks.
std::string plan_to_json_text(const Plan& plan) {
  json layers = json::array();
  for (const LayerPlacement& placement : plan.layers) {
    json shards = json::array();
    for (const cost::Shard& shard : placement.shards) {
      shards.push_back({shard.rank, shard.samples.begin, shard.samples.end});
    }
    json entry = {{"layer", placement.layer}, {"shards", std::move(shards)}};
    if (placement.split.splits()) {
      entry["split"] = {{"kind", cost::split_kind_name(placement.split.kind)}, {"parts", placement.split.parts}};
    }
    layers.push_back(std::move(entry));
  }
  // Version 3 unless the plan states its ranks' kinds (4) or clocks (5), so plans of one kind
  // at full clock read anywhere.
  std::string kinds = plan.rank_kinds.empty() ? "" : fmt::format("  \"rank_kinds\": {},\n", json(plan.rank_kinds).dump());
  if (plan.context_parallel > 1) kinds += fmt::format("  \"context_parallel\": {},\n", plan.context_parallel);
  if (plan.expert_parallel > 1) kinds += fmt::format("  \"expert_parallel\": {},\n", plan.expert_parallel);
  if (!plan.rank_clocks_mhz.empty()) kinds += fmt::format("  \"rank_clocks_mhz\": {},\n", json(plan.rank_clocks_mhz).dump());
  const int version = !plan.rank_clocks_mhz.empty() ? 5 : !plan.rank_kinds.empty() ? 4 : 3;
  std::string text = fmt::format(
      "{{\n  \"format\": {},\n  \"version\": {},\n  \"model\": {},\n  \"strategy\": {},\n"
      "  \"global_batch\": {},\n  \"devices\": {},\n{}{}  \"layers\": [",
      json(kPlanFormat).dump(), version, json(plan.model).dump(),
      json(plan.strategy).dump(), plan.global_batch, plan.devices, kinds, pipeline_json_text(plan));
  for (size_t i = 0; i < layers.size(); ++i) {
    text += fmt::format("{}\n    {}", i == 0 ? "" : ",", layers[i].dump());
  }
  return text + "\n  ]\n}\n";
}

namespace {

cost::Shard shard_from_json(JsonObjectReader& reader, const json& value) {
  if (!value.is_array() || value.size() != 3) {
    reader.fail("shards", fmt::format("must hold [rank, begin, end] triples, got {}", json_excerpt(value)));
  }
  const int64_t rank = reader.as_int("shards", value[0]);
  if (rank < 0 || rank > cluster::kMaxDevices) {
    reader.fail("shards", fmt::format("rank {} is out of range", rank));
  }
  return cost::Shard{static_cast<int>(rank), {reader.as_int("shards", value[1]), reader.as_int("shards", value[2])}};
}

// Version 3's "split": {"kind": "column", "parts": 4}.
cost::TensorSplit split_from_json(const json& value, const std::string& where) {
  JsonObjectReader reader(value, where);
  cost::TensorSplit split;
  split.kind = cost::split_kind_from_name(reader.get_string("kind"));
  const int64_t parts = reader.get_int("parts");
  reader.reject_unknown_keys();
  if (parts < 1 || parts > cluster::kMaxDevices) {
    reader.fail("parts", fmt::format("must be in [1, {}], got {}", cluster::kMaxDevices, parts));
  }
  split.parts = static_cast<int32_t>(parts);
  return split;
}

}  // namespace

Plan plan_from_json_text(const std::string& text) {
  const json document = parse_json_text(text);
  JsonObjectReader reader(document, "plan");
  const int64_t version = check_format(reader, kPlanFormat, kOldestPlanFormatVersion, kPlanFormatVersion);
  Plan plan;
  plan.model = reader.get_string("model");
  plan.strategy = reader.get_string("strategy", "hand");
  plan.global_batch = reader.get_int("global_batch");
  const int64_t devices = reader.get_int("devices");
  if (devices < 1 || devices > cluster::kMaxDevices) {
    reader.fail("devices", fmt::format("must be in [1, {}], got {}", cluster::kMaxDevices, devices));
  }
  plan.devices = static_cast<int>(devices);
  const json& layers = reader.require("layers");
  const json* pipeline = version >= 2 ? reader.find("pipeline") : nullptr;
  const json* kinds = version >= 4 ? reader.find("rank_kinds") : nullptr;
  const json* clocks = version >= 5 ? reader.find("rank_clocks_mhz") : nullptr;
  plan.context_parallel = static_cast<int>(reader.get_int("context_parallel", 1));
  plan.expert_parallel = static_cast<int>(reader.get_int("expert_parallel", 1));
  reader.reject_unknown_keys();
  if (clocks != nullptr) {
    if (!clocks->is_array() || clocks->size() != static_cast<size_t>(plan.devices)) {
      reader.fail("rank_clocks_mhz", fmt::format("must list a clock for each of the {} ranks, got {}", plan.devices,
                                                 json_excerpt(*clocks)));
    }
    for (const json& clock : *clocks) {
      if (!clock.is_number() || !(clock.get<double>() > 0)) {
        reader.fail("rank_clocks_mhz", fmt::format("must hold positive numbers (MHz), got {}", json_excerpt(clock)));
      }
      plan.rank_clocks_mhz.push_back(clock.get<double>());
    }
  }
  if (kinds != nullptr) {
    if (!kinds->is_array() || kinds->size() != static_cast<size_t>(plan.devices)) {
      reader.fail("rank_kinds", fmt::format("must list a device kind for each of the {} ranks, got {}", plan.devices,
                                            json_excerpt(*kinds)));
    }
    for (const json& kind : *kinds) plan.rank_kinds.push_back(reader.as_string("rank_kinds", kind));
  }
  if (!layers.is_array()) reader.fail("layers", "must be a list of layer placements");
  for (size_t i = 0; i < layers.size(); ++i) {
    JsonObjectReader layer(layers[i], fmt::format("plan layer #{}", i));
    LayerPlacement placement;
    placement.layer = layer.get_string("layer");
    const json& shards = layer.require("shards");
    const json* split = version >= 3 ? layer.find("split") : nullptr;
    layer.reject_unknown_keys();
    if (split != nullptr) placement.split = split_from_json(*split, fmt::format("plan layer '{}' split", placement.layer));
    if (!shards.is_array()) layer.fail("shards", "must be a list of [rank, begin, end]");
    for (const json& shard : shards) placement.shards.push_back(shard_from_json(layer, shard));
    plan.layers.push_back(std::move(placement));
  }
  if (pipeline != nullptr) plan.pipeline = pipeline_from_json(*pipeline, plan);
  return plan;
}

Plan load_plan_file(const std::string& path) {
  const std::string text = read_text_file(path, "plan");
  try {
    return plan_from_json_text(text);
  } catch (const UserError& error) {
    throw UserError(fmt::format("{}: {}", path, error.what()));
  }
}

void save_plan_file(const Plan& plan, const std::string& path) {
  write_text_file_atomically(path, plan_to_json_text(plan));
}

}  // namespace burst::plan
