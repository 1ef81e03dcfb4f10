#include "burst/sim/chrome_trace.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace burst::sim {
namespace {

// Thread ids within a rank's process.
enum Lane : int { kCompute = 0, kBackground = 1, kSend = 2, kReceive = 3, kCollective = 4 };
constexpr const char* kLaneNames[] = {"compute", "background", "send", "receive", "collectives"};

std::string layer_name(const graph::Graph* graph, int32_t layer) {
  if (graph == nullptr || layer < 0 || static_cast<size_t>(layer) >= graph->size()) return "?";
  return graph->layer(layer).name;
}

nlohmann::json slice(const SimEvent& event, int rank, Lane lane, std::string name, nlohmann::json args) {
  args["step"] = event.iteration;
  return {{"name", std::move(name)}, {"ph", "X"}, {"pid", rank}, {"tid", static_cast<int>(lane)},
          {"ts", event.start_s * 1e6}, {"dur", (event.end_s - event.start_s) * 1e6}, {"args", std::move(args)}};
}

// Names of the shown ranks' processes and lanes.
void add_metadata(nlohmann::json& events, int shown) {
  for (int rank = 0; rank < shown; ++rank) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"args", {{"name", fmt::format("rank {}", rank)}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", rank}, {"args", {{"sort_index", rank}}}});
    for (int lane = kCompute; lane <= kCollective; ++lane) {
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", lane},
                        {"args", {{"name", kLaneNames[lane]}}}});
    }
  }
}

const char* collective_name(EventKind kind) {
  return kind == EventKind::Allreduce       ? "gradient all-reduce"
         : kind == EventKind::BatchNormSync ? "BatchNorm statistics"
                                            : "tensor-parallel all-reduce";
}

// `event`'s slices on the shown ranks' lanes (a message on its sender's and its receiver's).
void add_slices(nlohmann::json& events, const SimEvent& event, const graph::Graph& foreground,
                const graph::Graph* background, int shown) {
  const std::string layer = layer_name(&foreground, event.layer);
  switch (event.kind) {
    case EventKind::Forward:
    case EventKind::Backward:
      if (event.rank < shown) {
        events.push_back(slice(event, event.rank, kCompute, fmt::format("{} {}", layer, event_kind_name(event.kind)), {}));
      }
      break;
    case EventKind::Update:
      if (event.rank < shown) events.push_back(slice(event, event.rank, kCompute, "optimizer step", {}));
      break;
    case EventKind::Background:
      if (event.rank < shown) {
        const std::string name = event.layer < 0 ? std::string("update") : layer_name(background, event.layer);
        events.push_back(slice(event, event.rank, kBackground, fmt::format("background {}", name), {}));
      }
      break;
    case EventKind::Message:
      if (event.rank < shown) {
        events.push_back(slice(event, event.rank, kSend, fmt::format("send {} data to r{}", layer, event.peer),
                               {{"peer", event.peer}, {"bytes", event.bytes}}));
      }
      if (event.peer < shown) {
        events.push_back(slice(event, event.peer, kReceive, fmt::format("recv {} data from r{}", layer, event.rank),
                               {{"peer", event.rank}, {"bytes", event.bytes}}));
      }
      break;
    case EventKind::Allreduce:
    case EventKind::BatchNormSync:
    case EventKind::TensorAllReduce:
      if (event.rank < shown) {
        const std::string name = event.layer < 0 ? std::string("gradient norm all-reduce")
                                                 : fmt::format("{} {}", layer, collective_name(event.kind));
        events.push_back(slice(event, event.rank, kCollective, name,
                               {{"ranks", event.peer}, {"bytes", event.bytes}}));
      }
      break;
  }
}

// Each shown rank's power over time as a counter track ("power", watts): its idle power
// plus what every event running on it adds, at each moment that changes.
void add_power_tracks(nlohmann::json& events, const SimResult& result, int shown) {
  if (result.idle_power_w.empty()) return;
  std::vector<std::vector<std::pair<double, double>>> changes(static_cast<size_t>(shown));
  auto add = [&](int rank, const SimEvent& event) {
    if (rank < 0 || rank >= shown || event.power_w == 0) return;
    changes[static_cast<size_t>(rank)].emplace_back(event.start_s, event.power_w);
    changes[static_cast<size_t>(rank)].emplace_back(event.end_s, -event.power_w);
  };
  for (const SimEvent& event : result.events) {
    add(event.rank, event);
    if (event.kind == EventKind::Message) add(event.peer, event);
  }
  for (int rank = 0; rank < shown; ++rank) {
    auto& list = changes[static_cast<size_t>(rank)];
    std::sort(list.begin(), list.end());
    double power = result.idle_power_w[static_cast<size_t>(rank)];
    events.push_back({{"name", "power"}, {"ph", "C"}, {"pid", rank}, {"ts", 0.0}, {"args", {{"W", power}}}});
    for (size_t i = 0; i < list.size(); ++i) {
      power += list[i].second;
      if (i + 1 < list.size() && list[i + 1].first == list[i].first) continue;  // one point per moment
      events.push_back({{"name", "power"}, {"ph", "C"}, {"pid", rank}, {"ts", list[i].first * 1e6},
                        {"args", {{"W", std::max(power, 0.0)}}}});
    }
  }
}

}  // namespace

std::string chrome_trace_json(const SimResult& result, const graph::Graph& foreground,
                              const graph::Graph* background, int max_ranks) {
  const int shown = std::min(result.devices, std::max(0, max_ranks));
  nlohmann::json events = nlohmann::json::array();
  add_metadata(events, shown);
  for (const SimEvent& event : result.events) add_slices(events, event, foreground, background, shown);
  add_power_tracks(events, result, shown);
  const nlohmann::json document = {
      {"traceEvents", std::move(events)},
      {"displayTimeUnit", "ms"},
      {"otherData",
       {{"generator", "burst sim"}, {"model", foreground.name()}, {"devices", result.devices},
        {"ranks_shown", shown}, {"iteration_time_ms", result.iteration_time.ms()}}}};
  return document.dump();
}

}  // namespace burst::sim
