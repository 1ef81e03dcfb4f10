#include "burst/plan/plan_memory.h"

#include <algorithm>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "burst/util/format.h"

namespace burst::plan {

std::vector<DeviceMemory> plan_memory(const Plan& plan, const graph::Graph& graph, cost::Optimizer optimizer) {
  BURST_ASSERT(plan.layers.size() == graph.size(), "a validated plan has one placement per layer");
  std::vector<DeviceMemory> devices(static_cast<size_t>(plan.devices));
  for (int rank = 0; rank < plan.devices; ++rank) devices[static_cast<size_t>(rank)].rank = rank;
  // Activations are kept for every micro-batch a stage has in flight (its schedule's peak:
  // GPipe all m, 1F1B p - s on stage s).
  std::vector<int64_t> in_flight;
  for (int stage = 0; stage < plan.stage_count(); ++stage) {
    in_flight.push_back(
        in_flight_micro_batches(plan.pipeline.schedule, plan.stage_count(), stage, plan.pipeline.micro_batches));
  }
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    const int64_t micro_batches_held = in_flight[static_cast<size_t>(plan.stage_of(id))];
    const LayerPlacement& placement = plan.layers[static_cast<size_t>(id)];
    for (const cost::Shard& shard : placement.shards) {
      BURST_ASSERT(shard.rank >= 0 && shard.rank < plan.devices, "a validated plan's ranks are in its cluster");
      DeviceMemory& device = devices[static_cast<size_t>(shard.rank)];
      const cost::LayerMemory layer =
          cost::layer_memory(graph, id, shard.samples.size() * micro_batches_held, optimizer, placement.split);
      device.use += layer;
      if (device.largest_layer_bytes < layer.total()) {
        device.largest_layer = id;
        device.largest_layer_bytes = layer.total();
      }
    }
  }
  // A tied embedding's weight, its gradient and its optimizer state are held on its heads'
  // ranks too (plan::weight_holders), without its activations.
  for (graph::LayerId embedding = 0; embedding < static_cast<graph::LayerId>(graph.size()); ++embedding) {
    if (graph.tied_heads(embedding).empty()) continue;
    const cost::LayerMemory copy = cost::layer_memory(graph, embedding, 0, optimizer);
    const auto& own = plan.layers[static_cast<size_t>(embedding)].shards;
    for (const int rank : weight_holders(plan, graph, embedding)) {
      const bool runs = std::any_of(own.begin(), own.end(), [rank](const cost::Shard& s) { return s.rank == rank; });
      if (!runs) devices[static_cast<size_t>(rank)].use += copy;
    }
  }
  return devices;
}

const DeviceMemory& peak_memory(const std::vector<DeviceMemory>& devices) {
  BURST_ASSERT(!devices.empty(), "a plan has at least one device");
  const DeviceMemory* peak = &devices.front();
  for (const DeviceMemory& device : devices) {
    if (peak->use.total() < device.use.total()) peak = &device;
  }
  return *peak;
}

std::string memory_text(const DeviceMemory& peak, const graph::Graph& graph, const MemoryCapacity& capacity) {
  const auto bytes_text = [](Bytes bytes) { return bytes_decimal(bytes.value()); };
  const cost::LayerMemory& use = peak.use;
  return fmt::format(
      "rank {} needs {} (weights {}, gradients {}, optimizer state {}, activations {}; layer '{}' the most, {}) "
      "of {} per {}",
      peak.rank, bytes_text(use.total()), bytes_text(use.weights), bytes_text(use.gradients),
      bytes_text(use.optimizer_state), bytes_text(use.activations), graph.layer(peak.largest_layer).name,
      bytes_text(peak.largest_layer_bytes), bytes_text(capacity.capacity), capacity.device);
}

namespace {

bool fits(const std::vector<DeviceMemory>& memory, const MemoryCapacity& capacity) {
  return !(capacity.capacity < peak_memory(memory).use.total());
}

}  // namespace

FittedPlan fit_in_memory(Plan planned, const std::string& strategy, const graph::Graph& graph,
                         cost::Optimizer optimizer, const MemoryCapacity& capacity) {
  FittedPlan fitted{std::move(planned), {}, ""};
  fitted.memory = plan_memory(fitted.plan, graph, optimizer);
  if (fits(fitted.memory, capacity)) return fitted;
  const DeviceMemory over = peak_memory(fitted.memory);
  std::string smallest = fmt::format("the {} plan's: {}", strategy, memory_text(over, graph, capacity));
  if (strategy != "data-parallel") {
    Plan data_parallel = plan_data_parallel(graph, fitted.plan.devices, fitted.plan.global_batch);
    std::vector<DeviceMemory> memory = plan_memory(data_parallel, graph, optimizer);
    if (fits(memory, capacity)) {
      return FittedPlan{std::move(data_parallel), std::move(memory),
                        fmt::format("the {} plan does not fit: {}; data parallel instead", strategy,
                                    memory_text(over, graph, capacity))};
    }
    const DeviceMemory& peak = peak_memory(memory);
    if (peak.use.total() < over.use.total()) {
      smallest = fmt::format("the data-parallel plan's: {}", memory_text(peak, graph, capacity));
    }
  }
  throw UserError(fmt::format("no plan fits in memory (optimizer {}): the smallest requirement found is {}",
                              cost::optimizer_name(optimizer), smallest));
}

}  // namespace burst::plan
