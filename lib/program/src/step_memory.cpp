#include "burst/program/step_memory.h"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "burst/program/recompute_units.h"
#include "burst/util/error.h"
#include "burst/util/format.h"

namespace burst::program {

namespace {

// What a rank holds while it recomputes: the largest recompute unit's activations (full) or
// attention probabilities (selective) of one micro-batch shard.
struct RecomputeWorkingSet {
  std::vector<std::vector<double>> by_rank_unit;  // full: [rank][unit] activation bytes
  std::vector<double> by_rank;                    // selective: the largest attention core
  std::vector<double> ring_by_rank;               // context parallelism: the largest ring's blocks
};

class MemoryCounter {
 public:
  // `selection`: the ranks to count (null: every rank).
  MemoryCounter(const plan::Plan& plan, const graph::Graph& graph, cost::Optimizer optimizer,
                const ProgramOptions& options, const RankSelection* selection)
      : plan_(plan), graph_(graph), options_(options),
        memory_{optimizer, options.precision, options.recompute},
        devices_(static_cast<size_t>(plan.devices)),
        selection_(selection) {
    for (int rank = 0; rank < plan.devices; ++rank) devices_[static_cast<size_t>(rank)].rank = rank;
    for (int stage = 0; stage < plan.stage_count(); ++stage) {
      in_flight_.push_back(plan::chunk_in_flight(plan, stage));
    }
    if (options.recompute == cost::Recompute::Full) units_ = recompute_units(graph);
    working_.by_rank_unit.resize(static_cast<size_t>(plan.devices));
    for (size_t rank = 0; rank < devices_.size(); ++rank) {
      if (counted(rank)) working_.by_rank_unit[rank].assign(units_.count(), 0.0);
    }
    working_.by_rank.assign(static_cast<size_t>(plan.devices), 0.0);
    working_.ring_by_rank.assign(static_cast<size_t>(plan.devices), 0.0);
    gathered_.assign(static_cast<size_t>(plan.devices), {0.0, 0.0});
  }

  std::vector<DeviceMemory> count() && {
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph_.size()); ++id) add_layer(id);
    add_tied_copies();
    add_working_sets();
    std::vector<DeviceMemory> kept;
    for (DeviceMemory& device : devices_) {
      if (counted(static_cast<size_t>(device.rank))) kept.push_back(std::move(device));
    }
    return selection_ == nullptr ? on_devices(std::move(kept)) : kept;
  }

 private:
  bool counted(size_t rank) const { return selection_ == nullptr || selection_->selected[rank] != 0; }
  double context() const { return plan_.context_parallel; }

  // Context parallelism counted its context groups: each group's C devices hold the same.
  std::vector<DeviceMemory> on_devices(std::vector<DeviceMemory> groups) const {
    if (plan_.context_parallel == 1) return groups;
    std::vector<DeviceMemory> devices;
    for (const DeviceMemory& group : groups) {
      if (group.rank >= plan_.devices / plan_.context_parallel) continue;
      for (int k = 0; k < plan_.context_parallel; ++k) {
        devices.push_back(group);
        devices.back().rank = plan_.context_device(group.rank, k);
      }
    }
    std::sort(devices.begin(), devices.end(), [](const DeviceMemory& a, const DeviceMemory& b) { return a.rank < b.rank; });
    return devices;
  }
  double value_scale() const { return cost::value_bytes(options_.precision) / cost::kFloatBytes; }

  // What one shard of a layer adds to its rank, at its sample count.
  struct ShardMemory {
    cost::LayerMemory use;
    double unit_working = 0;  // full recomputation: its activations of one micro-batch
    double core = 0;          // selective: its attention probabilities of one micro-batch
    double gathered = 0;      // ZeRO 3: its whole weights, gathered while it runs
    double ring = 0;          // context parallelism: ring attention's key and value blocks
  };

  ShardMemory shard_memory(graph::LayerId id, const plan::LayerPlacement& placement, int64_t samples, int64_t held) const {
    const int replicas = static_cast<int>(placement.sample_groups());
    // HSDP shards over its shard groups (ProgramOptions::fsdp_shard), not the whole group;
    // each of them over its C context ranks too.
    const int sharded = (options_.fsdp_shard > 0 ? std::min(replicas, options_.fsdp_shard) : replicas) *
                        plan_.context_parallel;
    const cost::TensorSplit split = plan_.layer_split(graph_, id);
    ShardMemory shard;
    shard.use = cost::shard_state(cost::layer_memory(graph_, id, samples * held, memory_, split), options_.zero_stage,
                                  sharded);
    if (options_.recompute == cost::Recompute::Full) {
      // One micro-batch of it is rebuilt while its unit runs backward; only a unit's kept
      // inputs stay for every micro-batch in flight.
      shard.unit_working = shard.use.activations.value() / static_cast<double>(held);
      shard.use.activations = units_.kept[static_cast<size_t>(id)] ? kept_output(id, placement, samples * held) : Bytes(0);
    }
    if (options_.recompute == cost::Recompute::Selective) {
      shard.core = cost::attention_core_per_sample(graph_, id).value() * value_scale() / heads(placement) / context() *
                   static_cast<double>(samples);
    }
    // Ring attention's blocks while the layer runs: the keys and values it computes on, the
    // pair arriving, and (backward) their two gradients.
    shard.ring = 4 * cost::keys_values_per_sample(graph_, id).value() * value_scale() / heads(placement) / context() *
                 static_cast<double>(samples) * (plan_.context_parallel > 1 ? 1 : 0);
    if (options_.zero_stage == 3 && sharded > 1) {
      shard.gathered = cost::layer_memory(graph_, id, 0, memory_, placement.split).weights.value();
    }
    return shard;
  }

  static double heads(const plan::LayerPlacement& placement) {
    return placement.split.kind == cost::SplitKind::Heads ? placement.split.parts : 1;
  }

  // Each shard's memory on its rank; shards of one size are counted once (data parallelism
  // on thousands of ranks has thousands of equal shards).
  void add_layer(graph::LayerId id) {
    const int64_t held = in_flight_[static_cast<size_t>(plan_.stage_of(id))];
    const plan::LayerPlacement& placement = plan_.layers[static_cast<size_t>(id)];
    int64_t known_samples = -1;
    ShardMemory shard;
    const auto count = selection_ ? selection_->shards[static_cast<size_t>(id)].size() : placement.shards.size();
    for (size_t i = 0; i < count; ++i) {
      const cost::Shard& placed =
          placement.shards[selection_ ? static_cast<size_t>(selection_->shards[static_cast<size_t>(id)][i]) : i];
      BURST_ASSERT(placed.rank >= 0 && placed.rank < plan_.devices, "a validated plan's ranks are in its cluster");
      if (placed.samples.size() != known_samples) {
        known_samples = placed.samples.size();
        shard = shard_memory(id, placement, known_samples, held);
      }
      const auto rank = static_cast<size_t>(placed.rank);
      if (options_.recompute == cost::Recompute::Full) {
        working_.by_rank_unit[rank][static_cast<size_t>(units_.unit_of[static_cast<size_t>(id)])] += shard.unit_working;
      }
      working_.by_rank[rank] = std::max(working_.by_rank[rank], shard.core);
      working_.ring_by_rank[rank] = std::max(working_.ring_by_rank[rank], shard.ring);
      if (shard.gathered > 0) note_gathered(rank, shard.gathered);
      DeviceMemory& device = devices_[rank];
      device.use += shard.use;
      if (device.largest_layer_bytes < shard.use.total()) {
        device.largest_layer = id;
        device.largest_layer_bytes = shard.use.total();
      }
    }
  }

  // A unit's kept input: the layer's output alone (what it keeps inside is recomputed).
  Bytes kept_output(graph::LayerId id, const plan::LayerPlacement& placement, int64_t samples) const {
    const double sliced = cost::divides_output(placement.split.kind) ? placement.split.parts : 1;
    return Bytes(static_cast<double>(graph_.info(id).output_bytes) / sliced / context() * value_scale() *
                 static_cast<double>(samples));
  }

  // ZeRO-3: a rank's two largest whole weights (the layer computing and the one gathered ahead).
  void note_gathered(size_t rank, double whole) {
    auto& largest = gathered_[rank];
    if (whole > largest.first) {
      largest.second = largest.first;
      largest.first = whole;
    } else {
      largest.second = std::max(largest.second, whole);
    }
  }

  // A tied embedding's weight, its gradient and its optimizer state are held on its heads'
  // ranks too (plan::weight_holders), without its activations.
  void add_tied_copies() {
    for (graph::LayerId embedding = 0; embedding < static_cast<graph::LayerId>(graph_.size()); ++embedding) {
      if (graph_.tied_heads(embedding).empty()) continue;
      const std::vector<int> holders = plan::weight_holders(plan_, graph_, embedding);
      const cost::LayerMemory copy = cost::shard_state(cost::layer_memory(graph_, embedding, 0, memory_),
                                                       options_.zero_stage,
                                                       static_cast<int>(holders.size()) * plan_.context_parallel);
      const auto& own = plan_.layers[static_cast<size_t>(embedding)].shards;
      for (const int rank : holders) {
        if (!counted(static_cast<size_t>(rank))) continue;
        const bool runs = std::any_of(own.begin(), own.end(), [rank](const cost::Shard& s) { return s.rank == rank; });
        if (!runs) devices_[static_cast<size_t>(rank)].use += copy;
      }
    }
  }

  void add_working_sets() {
    for (DeviceMemory& device : devices_) {
      const auto r = static_cast<size_t>(device.rank);
      if (!counted(r)) continue;
      const auto& units = working_.by_rank_unit[r];
      const double unit = units.empty() ? 0 : *std::max_element(units.begin(), units.end());
      device.use.activations += Bytes(unit + working_.by_rank[r]);
      const auto& gathered = gathered_[r];
      device.use.buffers += Bytes(gathered.first + gathered.second + working_.ring_by_rank[r]);
    }
  }

  const plan::Plan& plan_;
  const graph::Graph& graph_;
  const ProgramOptions& options_;
  cost::MemoryOptions memory_;
  std::vector<DeviceMemory> devices_;
  const RankSelection* selection_;  // null: every rank
  // Micro-batches each stage keeps activations for at once (its schedule's peak: GPipe all
  // m, 1F1B p - s on stage s).
  std::vector<int64_t> in_flight_;
  RecomputeUnits units_;
  RecomputeWorkingSet working_;
  std::vector<std::pair<double, double>> gathered_;  // by rank: its two largest whole weights (ZeRO 3)
};

}  // namespace

std::vector<DeviceMemory> plan_memory(const plan::Plan& plan, const graph::Graph& graph, cost::Optimizer optimizer,
                                      const ProgramOptions& options) {
  BURST_ASSERT(plan.layers.size() == graph.size(), "a validated plan has one placement per layer");
  return MemoryCounter(plan, graph, optimizer, options, nullptr).count();
}

RankSelection select_ranks(const plan::Plan& plan, const std::vector<int>& ranks) {
  RankSelection selection;
  selection.ranks = ranks;
  std::sort(selection.ranks.begin(), selection.ranks.end());
  selection.selected.assign(static_cast<size_t>(plan.devices), 0);
  for (const int rank : selection.ranks) {
    BURST_ASSERT(rank >= 0 && rank < plan.devices, "selected ranks are the plan's");
    selection.selected[static_cast<size_t>(rank)] = 1;
  }
  selection.shards.resize(plan.layers.size());
  for (size_t id = 0; id < plan.layers.size(); ++id) {
    const auto& shards = plan.layers[id].shards;
    for (size_t i = 0; i < shards.size(); ++i) {
      if (selection.selected[static_cast<size_t>(shards[i].rank)]) selection.shards[id].push_back(static_cast<int32_t>(i));
    }
  }
  return selection;
}

std::vector<DeviceMemory> plan_memory_of_ranks(const plan::Plan& plan, const graph::Graph& graph,
                                               cost::Optimizer optimizer, const ProgramOptions& options,
                                               const RankSelection& selection) {
  BURST_ASSERT(plan.layers.size() == graph.size() && selection.shards.size() == graph.size(),
               "a validated plan has one placement per layer, and its selection one entry per layer");
  return MemoryCounter(plan, graph, optimizer, options, &selection).count();
}

LayerStateBound largest_unsplit_layer_state(const graph::Graph& graph, cost::Optimizer optimizer,
                                            const ProgramOptions& options, int devices) {
  const cost::MemoryOptions memory{optimizer, options.precision, options.recompute};
  LayerStateBound largest;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    const cost::LayerMemory state =
        cost::shard_state(cost::layer_memory(graph, id, 0, memory), options.zero_stage, std::max(1, devices));
    if (largest.bytes < state.total()) largest = LayerStateBound{id, state.total()};
  }
  return largest;
}

Bytes unsplit_pipeline_state_bound(const graph::Graph& graph, cost::Optimizer optimizer, const ProgramOptions& options,
                                   int devices, int max_stages) {
  const cost::MemoryOptions memory{optimizer, options.precision, options.recompute};
  cost::LayerMemory whole;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    whole += cost::layer_memory(graph, id, 0, memory);
  }
  return Bytes(cost::shard_state(whole, options.zero_stage, std::max(1, devices)).total().value() /
               static_cast<double>(std::max(1, max_stages)));
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
      "rank {} needs {} (weights {}, gradients {}, optimizer state {}, activations {}{}; layer '{}' the most, {}) "
      "of {} per {}",
      peak.rank, bytes_text(use.total()), bytes_text(use.weights), bytes_text(use.gradients),
      bytes_text(use.optimizer_state), bytes_text(use.activations),
      use.buffers.value() > 0 ? ", communication buffers " + bytes_text(use.buffers) : std::string(),
      graph.layer(peak.largest_layer).name,
      bytes_text(peak.largest_layer_bytes), bytes_text(capacity.of(peak.rank)), capacity.device_of(peak.rank));
}

bool fits(const std::vector<DeviceMemory>& memory, const MemoryCapacity& capacity) {
  if (capacity.rank_capacity.empty()) return !(capacity.capacity < peak_memory(memory).use.total());
  return std::none_of(memory.begin(), memory.end(),
                      [&](const DeviceMemory& device) { return capacity.of(device.rank) < device.use.total(); });
}

const DeviceMemory& tightest_memory(const std::vector<DeviceMemory>& memory, const MemoryCapacity& capacity) {
  if (capacity.rank_capacity.empty()) return peak_memory(memory);
  BURST_ASSERT(!memory.empty(), "a plan has at least one device");
  const DeviceMemory* tightest = &memory.front();
  auto share = [&](const DeviceMemory& device) { return device.use.total().value() / capacity.of(device.rank).value(); };
  for (const DeviceMemory& device : memory) {
    if (share(*tightest) < share(device)) tightest = &device;
  }
  return *tightest;
}

FittedPlan fit_in_memory(plan::Plan planned, const std::string& strategy, const graph::Graph& graph,
                         cost::Optimizer optimizer, const MemoryCapacity& capacity, const ProgramOptions& options) {
  FittedPlan fitted{std::move(planned), {}, ""};
  fitted.memory = plan_memory(fitted.plan, graph, optimizer, options);
  if (fits(fitted.memory, capacity)) return fitted;
  const DeviceMemory over = tightest_memory(fitted.memory, capacity);
  std::string smallest = fmt::format("the {} plan's: {}", strategy, memory_text(over, graph, capacity));
  if (strategy != "data-parallel") {
    plan::Plan data_parallel = plan::plan_data_parallel(graph, fitted.plan.devices, fitted.plan.global_batch);
    std::vector<DeviceMemory> memory = plan_memory(data_parallel, graph, optimizer, options);
    if (fits(memory, capacity)) {
      return FittedPlan{std::move(data_parallel), std::move(memory),
                        fmt::format("the {} plan does not fit: {}; data parallel instead", strategy,
                                    memory_text(over, graph, capacity))};
    }
    const DeviceMemory& peak = tightest_memory(memory, capacity);
    if (peak.use.total() < over.use.total()) {
      smallest = fmt::format("the data-parallel plan's: {}", memory_text(peak, graph, capacity));
    }
  }
  throw UserError(fmt::format(
      "no plan fits in memory (optimizer {}, precision {}, recompute {}, ZeRO {}): the smallest requirement found is {}",
      cost::optimizer_name(optimizer), cost::precision_name(options.precision), cost::recompute_name(options.recompute),
      options.zero_stage, smallest));
}

}  // namespace burst::program
