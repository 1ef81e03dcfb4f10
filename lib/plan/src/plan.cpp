#include "burst/plan/plan.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "burst/cost/power.h"
#include "burst/graph/language_model.h"
#include "burst/util/error.h"
#include "burst/util/hash.h"
#include "burst/util/json_io.h"

namespace burst::plan {

const char* schedule_name(Schedule schedule) { return kScheduleNames.name(schedule); }

Schedule schedule_from_name(const std::string& name) { return kScheduleNames.parse(name); }

int Plan::stage_of(graph::LayerId layer) const {
  const auto& starts = pipeline.stage_starts;
  return static_cast<int>(std::upper_bound(starts.begin(), starts.end(), layer) - starts.begin());
}

std::vector<int> Plan::stage_ranks(int stage) const {
  const auto begin = static_cast<size_t>(stage == 0 ? 0 : pipeline.stage_starts.at(static_cast<size_t>(stage - 1)));
  const size_t end = stage + 1 < stage_count() ? static_cast<size_t>(pipeline.stage_starts[static_cast<size_t>(stage)])
                                               : layers.size();
  std::vector<int> ranks;
  for (size_t id = begin; id < end; ++id) {
    for (const cost::Shard& shard : layers[id].shards) ranks.push_back(shard.rank);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

int Plan::tensor_width() const {
  int32_t width = 1;
  for (const LayerPlacement& placement : layers) width = std::max(width, placement.split.parts);
  return width;
}

int Plan::context_device(int group, int k) const {
  if (context_parallel == 1) return group;
  const int t = tensor_width();
  return (group / t) * context_parallel * t + k * t + group % t;
}

cost::TensorSplit Plan::layer_split(const graph::Graph& graph, graph::LayerId id) const {
  cost::TensorSplit split = layers.at(static_cast<size_t>(id)).split;
  split.context = context_parallel;
  if (expert_parallel > 1 && graph.layer(id).op() == graph::OpKind::Moe) split.experts = expert_parallel;
  return split;
}

std::vector<std::pair<bool, int64_t>> stage_order(Schedule schedule, int stages, int stage, int64_t micro_batches) {
  BURST_ASSERT(stage >= 0 && stage < stages && micro_batches >= 1, "stage_order out of range");
  std::vector<std::pair<bool, int64_t>> order;
  if (schedule == Schedule::GPipe) {
    for (int64_t j = 0; j < micro_batches; ++j) order.emplace_back(false, j);
    for (int64_t j = 0; j < micro_batches; ++j) order.emplace_back(true, j);
    return order;
  }
  // 1F1B: warm-up forwards fill the pipe below this stage; then each forward is followed
  // by the backward of the oldest micro-batch in flight; the last backwards drain it.
  const int64_t warm_up = std::min<int64_t>(stages - 1 - stage, micro_batches);
  for (int64_t j = 0; j < warm_up; ++j) order.emplace_back(false, j);
  for (int64_t j = 0; j + warm_up < micro_batches; ++j) {
    order.emplace_back(false, j + warm_up);
    order.emplace_back(true, j);
  }
  for (int64_t j = micro_batches - warm_up; j < micro_batches; ++j) order.emplace_back(true, j);
  return order;
}

int64_t in_flight_micro_batches(Schedule schedule, int stages, int stage, int64_t micro_batches) {
  int64_t held = 0, peak = 0;
  if (schedule == Schedule::ZeroBubbleH1) {  // a micro-batch's activations go with its W
    for (const PipelineStep& step : zero_bubble_order(stages, stage, micro_batches)) {
      held += step.weight ? -1 : step.backward ? 0 : 1;
      peak = std::max(peak, held);
    }
    return peak;
  }
  for (const auto& [backward, j] : stage_order(schedule, stages, stage, micro_batches)) {
    held += backward ? -1 : 1;
    peak = std::max(peak, held);
  }
  return peak;
}

std::vector<PipelineStep> zero_bubble_order(int stages, int stage, int64_t micro_batches) {
  std::vector<PipelineStep> order;
  const int64_t lag = stage;  // W j waits for B (j + lag): p micro-batches in flight on every stage
  int64_t next_weight = 0;
  for (const auto& [backward, j] : stage_order(Schedule::OneFOneB, stages, stage, micro_batches)) {
    order.push_back(PipelineStep{stage, backward, j});
    if (backward && j >= lag) order.push_back(PipelineStep{stage, false, next_weight++, true});
  }
  while (next_weight < micro_batches) order.push_back(PipelineStep{stage, false, next_weight++, true});
  return order;
}

namespace {

// Interleaved 1F1B on physical stage `stage` of p, V chunks a rank, m micro-batches.
std::vector<PipelineStep> interleaved_order(int p, int v, int stage, int64_t m) {
  const int64_t total = m * v;
  const auto step = [&](int64_t k, bool backward) {
    const auto local = static_cast<int>((k / p) % v);
    const int chunk = (backward ? v - 1 - local : local) * p + stage;
    return PipelineStep{chunk, backward, (k / (static_cast<int64_t>(p) * v)) * p + k % p};
  };
  const int64_t warm_up = std::min<int64_t>(static_cast<int64_t>(p - stage - 1) * 2 + static_cast<int64_t>(v - 1) * p, total);
  std::vector<PipelineStep> order;
  for (int64_t k = 0; k < warm_up; ++k) order.push_back(step(k, false));
  for (int64_t k = 0; k + warm_up < total; ++k) {
    order.push_back(step(k + warm_up, false));
    order.push_back(step(k, true));
  }
  for (int64_t k = total - warm_up; k < total; ++k) order.push_back(step(k, true));
  return order;
}

}  // namespace

std::vector<PipelineStep> physical_stage_order(const Plan& plan, int stage) {
  const int v = plan.pipeline.virtual_stages;
  const int p = plan.physical_stages();
  BURST_ASSERT(stage >= 0 && stage < p, "physical_stage_order out of range");
  if (v > 1) return interleaved_order(p, v, stage, plan.pipeline.micro_batches);
  if (plan.pipeline.schedule == Schedule::ZeroBubbleH1) return zero_bubble_order(p, stage, plan.pipeline.micro_batches);
  std::vector<PipelineStep> order;
  for (const auto& [backward, j] : stage_order(plan.pipeline.schedule, p, stage, plan.pipeline.micro_batches)) {
    order.push_back(PipelineStep{stage, backward, j});
  }
  return order;
}

int64_t chunk_in_flight(const Plan& plan, int chunk) {
  const int stage = chunk % plan.physical_stages();
  std::vector<int64_t> held(static_cast<size_t>(plan.stage_count()), 0);
  int64_t total = 0, peak = 0, at_peak = 0;
  const bool split = plan.pipeline.schedule == Schedule::ZeroBubbleH1;  // activations go with W, not B
  for (const PipelineStep& step : physical_stage_order(plan, stage)) {
    const int64_t change = step.weight ? -1 : step.backward ? (split ? 0 : -1) : 1;
    held[static_cast<size_t>(step.chunk)] += change;
    total += change;
    if (total > peak) {
      peak = total;
      at_peak = held[static_cast<size_t>(chunk)];
    }
  }
  return at_peak;
}

std::vector<BoundaryCrossing> boundary_crossings(const graph::Graph& graph) {
  const auto count = static_cast<graph::LayerId>(graph.size());
  // A producer p whose last consumer is q crosses every boundary c in (p, q].
  std::vector<graph::LayerId> last_consumer(graph.size(), -1);
  for (graph::LayerId consumer = 0; consumer < count; ++consumer) {
    for (const graph::LayerId producer : graph.inputs(consumer)) {
      last_consumer[static_cast<size_t>(producer)] = std::max(last_consumer[static_cast<size_t>(producer)], consumer);
    }
  }
  std::vector<std::vector<graph::LayerId>> ends(graph.size() + 1);  // by c: producers whose last boundary is c - 1
  std::set<graph::LayerId> active;
  std::vector<BoundaryCrossing> crossings(graph.size());
  for (graph::LayerId c = 0; c < count; ++c) {
    for (const graph::LayerId producer : ends[static_cast<size_t>(c)]) active.erase(producer);
    if (c > 0 && last_consumer[static_cast<size_t>(c - 1)] > c - 1) {
      active.insert(c - 1);
      ends[static_cast<size_t>(last_consumer[static_cast<size_t>(c - 1)]) + 1].push_back(c - 1);
    }
    BoundaryCrossing& crossing = crossings[static_cast<size_t>(c)];
    crossing.count = static_cast<int>(active.size());
    if (!active.empty()) crossing.first = *active.begin();
    if (active.size() > 1) crossing.second = *std::next(active.begin());
  }
  return crossings;
}

namespace {

// Interleaving's: V chunks a rank under the interleaved schedule only, V dividing the
// stages into at least 2 physical ones, and micro-batches in whole rounds of them.
void validate_virtual_stages(const Plan& plan) {
  const Pipeline& pipeline = plan.pipeline;
  const int v = pipeline.virtual_stages;
  const bool interleaved = pipeline.schedule == Schedule::Interleaved;
  if (v < 1 || (v > 1) != interleaved) {
    throw UserError(fmt::format("plan: {} virtual stages under the {} schedule (the interleaved schedule takes 2 or "
                                "more, the others 1)",
                                v, schedule_name(pipeline.schedule)));
  }
  if (!interleaved) return;
  if (plan.stage_count() % v != 0 || plan.stage_count() / v < 2) {
    throw UserError(fmt::format("plan: {} virtual stages do not divide its {} stages into 2 or more physical ones", v,
                                plan.stage_count()));
  }
  if (pipeline.micro_batches % plan.physical_stages() != 0) {
    throw UserError(fmt::format("plan: the interleaved schedule runs micro-batches in rounds of its {} physical "
                                "stages, but it has {}",
                                plan.physical_stages(), pipeline.micro_batches));
  }
}

// The pipeline's own rules (validate_plan), after the layers'.
void validate_pipeline(const Plan& plan, const graph::Graph& graph, int devices) {
  const Pipeline& pipeline = plan.pipeline;
  if (pipeline.micro_batches < 1 || plan.global_batch % pipeline.micro_batches != 0) {
    throw UserError(fmt::format("plan: {} micro-batches {} the global batch of {}", pipeline.micro_batches,
                                pipeline.micro_batches < 1 ? "cannot cut" : "do not divide", plan.global_batch));
  }
  const auto layer_count = static_cast<graph::LayerId>(graph.size());
  graph::LayerId previous = 0;
  for (const graph::LayerId start : pipeline.stage_starts) {
    if (start <= previous || start >= layer_count) {
      throw UserError(fmt::format("plan: stage starts must ascend within layers 1..{}, got layer #{} after #{}",
                                  layer_count - 1, start, previous));
    }
    previous = start;
  }
  // A stage takes one tensor from the stage before; a boundary inside a branch is crossed
  // by two.
  if (!pipeline.stage_starts.empty()) {
    const std::vector<BoundaryCrossing> crossings = boundary_crossings(graph);
    for (const graph::LayerId start : pipeline.stage_starts) {
      const BoundaryCrossing& crossing = crossings[static_cast<size_t>(start)];
      if (crossing.count > 1) {
        throw UserError(fmt::format("plan: the stage starting at layer '{}' is inside a branch: layers '{}' and '{}' "
                                    "both feed layers after it",
                                    graph.layer(start).name, graph.layer(crossing.first).name,
                                    graph.layer(crossing.second).name));
      }
    }
  }
  validate_virtual_stages(plan);
  // A rank runs the chunks of one physical stage (one stage, but for interleaving).
  std::vector<int> stage_of_rank(static_cast<size_t>(devices), -1);
  for (size_t id = 0; id < plan.layers.size(); ++id) {
    const int stage = plan.stage_of(static_cast<graph::LayerId>(id)) % plan.physical_stages();
    for (const cost::Shard& shard : plan.layers[id].shards) {
      int& owner = stage_of_rank[static_cast<size_t>(shard.rank)];
      if (owner >= 0 && owner != stage) {
        throw UserError(fmt::format("plan layer '{}': rank {} of stage {} already runs layers of stage {}",
                                    plan.layers[id].layer, shard.rank, stage, owner));
      }
      owner = stage;
    }
    if (pipeline.micro_batches > 1 && graph.layer(static_cast<graph::LayerId>(id)).op() == graph::OpKind::BatchNorm2d) {
      throw UserError(fmt::format("plan layer '{}': BatchNorm normalises with the statistics of the whole batch, "
                                  "which {} micro-batches do not see at once; use one micro-batch or a model "
                                  "without BatchNorm",
                                  plan.layers[id].layer, pipeline.micro_batches));
    }
  }
}

void validate_clocks(const Plan& plan, const cluster::Cluster& cluster) {
  if (plan.rank_clocks_mhz.empty()) return;
  if (plan.rank_clocks_mhz.size() != static_cast<size_t>(plan.devices)) {
    throw UserError(fmt::format("plan states {} rank clocks for {} ranks", plan.rank_clocks_mhz.size(), plan.devices));
  }
  for (int rank = 0; rank < std::min(cluster.size(), plan.devices); ++rank) {
    const auto power = cost::catalog_power(cluster.kind_of(rank));
    if (!power) {
      throw UserError(fmt::format("plan sets rank {}'s clock, but device kind '{}' has no power model", rank,
                                  cluster.kind_of(rank)));
    }
    cost::clock_ratio_of(*power, plan.rank_clocks_mhz[static_cast<size_t>(rank)]);
  }
}

// Context parallelism's: C devices a group, C dividing the cluster, and every sample's tokens
// cut into 2C chunks (each rank takes two, one from each end, for causal balance).
void validate_context(const Plan& plan, const graph::Graph& graph, const cluster::Cluster& cluster) {
  const int c = plan.context_parallel;
  if (c == 1) return;
  if (c < 1 || cluster.size() % c != 0) {
    throw UserError(fmt::format("plan: context parallelism over {} devices does not divide the cluster's {}", c,
                                cluster.size()));
  }
  if (cluster.mixed()) throw UserError("plan: context parallelism on a cluster of mixed device kinds is not planned");
  const std::optional<int64_t> tokens = graph::sequence_length(graph);
  if (!tokens) throw UserError(fmt::format("plan: context parallelism needs a language model, not '{}'", graph.name()));
  if (*tokens % (2 * c) != 0) {
    throw UserError(fmt::format("plan: context parallelism over {} devices cuts each sample's {} tokens into {} "
                                "chunks, which do not divide them",
                                c, *tokens, 2 * c));
  }
}

// Expert parallelism's: E a positive size; every moe layer whole on each of its ranks (no
// tensor split), with sample groups in whole expert groups of E and E dividing its experts.
void validate_experts(const Plan& plan, const graph::Graph& graph) {
  const int e = plan.expert_parallel;
  if (e < 1) throw UserError(fmt::format("plan: expert parallelism over {} sample groups", e));
  if (e == 1) return;
  if (plan.context_parallel > 1) throw UserError("plan: expert parallelism with context parallelism is not planned");
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    if (graph.layer(id).op() != graph::OpKind::Moe) continue;
    const LayerPlacement& placement = plan.layers[static_cast<size_t>(id)];
    const int64_t experts = std::get<graph::MoeAttrs>(graph.layer(id).attrs).experts;
    if (experts % e != 0) {
      throw UserError(fmt::format("--expert-parallel {} does not divide the {} experts of '{}'", e, experts,
                                  placement.layer));
    }
    if (placement.split.splits()) {
      throw UserError(fmt::format("plan layer '{}': expert parallelism of a tensor-split moe layer is not planned "
                                  "(use --tensor-parallel 1)",
                                  placement.layer));
    }
    if (placement.sample_groups() % static_cast<size_t>(e) != 0) {
      throw UserError(fmt::format("--expert-parallel {} does not divide the {} data-parallel sample groups of '{}'", e,
                                  placement.sample_groups(), placement.layer));
    }
  }
}

}  // namespace

// Long: the refusals in the order a user fixes a plan file (model,
// devices, batch, each layer's placement), each naming the layer and the values involved.
void validate_plan(const Plan& plan, const graph::Graph& graph, const cluster::Cluster& cluster) {
  if (plan.model != graph.name()) {
    throw UserError(fmt::format("plan is for model '{}', not '{}'", plan.model, graph.name()));
  }
  if (plan.layers.size() != graph.size()) {
    throw UserError(fmt::format("plan has {} layers but model '{}' has {}", plan.layers.size(),
                                graph.name(), graph.size()));
  }
  if (plan.global_batch < 1) {
    throw UserError(fmt::format("plan: global batch must be at least 1, got {}", plan.global_batch));
  }
  if (cluster.mixed() && !plan.rank_kinds.empty()) {
    for (int rank = 0; rank < std::min(cluster.size(), static_cast<int>(plan.rank_kinds.size())); ++rank) {
      if (plan.rank_kinds[static_cast<size_t>(rank)] != cluster.kind_of(rank)) {
        throw UserError(fmt::format("plan was made for kind {} at rank {}, but the cluster's rank {} is of kind {}",
                                    text_excerpt(plan.rank_kinds[static_cast<size_t>(rank)]), rank, rank,
                                    cluster.kind_of(rank)));
      }
    }
  }
  validate_clocks(plan, cluster);
  validate_context(plan, graph, cluster);
  const int groups = cluster.size() / plan.context_parallel;  // context groups: the ranks shards name
  if (plan.pipeline.micro_batches < 1 || plan.global_batch % plan.pipeline.micro_batches != 0) {
    validate_pipeline(plan, graph, groups);  // refuses the micro-batch count before the shards are read against it
  }
  const int64_t batch = plan.micro_batch();
  for (size_t id = 0; id < plan.layers.size(); ++id) {
    const LayerPlacement& placement = plan.layers[id];
    const std::string& expected = graph.layer(static_cast<graph::LayerId>(id)).name;
    if (placement.layer != expected) {
      throw UserError(fmt::format("plan layer #{} is '{}' but the model's layer #{} is '{}'", id,
                                  placement.layer, id, expected));
    }
    const std::string where = fmt::format("plan layer '{}'", placement.layer);
    if (placement.shards.empty()) throw UserError(where + ": runs on no rank");
    std::set<int> ranks;
    for (const cost::Shard& shard : placement.shards) {
      if (shard.rank < 0 || shard.rank >= groups) {
        throw UserError(plan.context_parallel > 1
                            ? fmt::format("{}: rank {} is not one of the {} context groups of {} devices", where,
                                          shard.rank, groups, plan.context_parallel)
                            : fmt::format("{}: rank {} is not in the cluster of {} devices", where, shard.rank,
                                          cluster.size()));
      }
      if (!ranks.insert(shard.rank).second) {
        throw UserError(fmt::format("{}: rank {} appears twice", where, shard.rank));
      }
    }
    validate_tensor_split(placement, graph, static_cast<graph::LayerId>(id));
    // Coverage: sorted by start, the ranges of the sample groups (their part 0s) must tile
    // [0, micro-batch) with no gap or overlap.
    std::vector<cost::Shard> sorted;
    for (size_t i = 0; i < placement.shards.size(); ++i) {
      if (placement.part_of(i) == 0) sorted.push_back(placement.shards[i]);
    }
    std::sort(sorted.begin(), sorted.end(), [](const cost::Shard& a, const cost::Shard& b) {
      return a.samples.begin < b.samples.begin;
    });
    int64_t next = 0;
    for (const cost::Shard& shard : sorted) {
      if (shard.samples.size() <= 0) {
        throw UserError(fmt::format("{}: rank {} has the empty range [{}, {})", where, shard.rank,
                                    shard.samples.begin, shard.samples.end));
      }
      if (shard.samples.begin != next) {
        throw UserError(fmt::format("{}: samples [{}, {}) are {}", where, std::min(next, shard.samples.begin),
                                    std::max(next, shard.samples.begin),
                                    shard.samples.begin > next ? "covered by no rank" : "covered twice"));
      }
      next = shard.samples.end;
    }
    if (next != batch) {
      throw UserError(fmt::format("{}: samples [{}, {}) are {}", where, std::min(next, batch), std::max(next, batch),
                                  next < batch ? "covered by no rank"
                                               : plan.pipeline.micro_batches > 1 ? "beyond the micro-batch"
                                                                                 : "beyond the global batch"));
    }
  }
  validate_pipeline(plan, graph, groups);
  validate_experts(plan, graph);
}

std::vector<cost::Transfer> activation_transfers(const Plan& plan, graph::LayerId producer,
                                                 graph::LayerId consumer) {
  return cost::reshard_transfers(plan.layers.at(static_cast<size_t>(producer)).shards,
                                 plan.layers.at(static_cast<size_t>(consumer)).shards);
}

std::vector<int> weight_holders(const Plan& plan, const graph::Graph& graph, graph::LayerId layer) {
  std::vector<int> ranks;
  for (const cost::Shard& shard : plan.layers.at(static_cast<size_t>(layer)).shards) ranks.push_back(shard.rank);
  for (const graph::LayerId head : graph.tied_heads(layer)) {
    for (const cost::Shard& shard : plan.layers.at(static_cast<size_t>(head)).shards) ranks.push_back(shard.rank);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

std::vector<int> sync_group(const Plan& plan, const graph::Graph& graph, graph::LayerId layer) {
  if (graph.info(layer).params == 0) return {};
  std::vector<int> ranks = weight_holders(plan, graph, layer);
  if (ranks.size() < 2) return {};
  return ranks;
}

std::vector<cost::Shard> even_split(const std::vector<int>& ranks, int64_t batch) {
  BURST_ASSERT(!ranks.empty() && batch >= static_cast<int64_t>(ranks.size()),
               "even_split needs 1 <= ranks <= batch");
  const auto count = static_cast<int64_t>(ranks.size());
  std::vector<cost::Shard> shards;
  int64_t begin = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t size = batch / count + (i < batch % count ? 1 : 0);
    shards.push_back(cost::Shard{ranks[static_cast<size_t>(i)], {begin, begin + size}});
    begin += size;
  }
  return shards;
}

Plan plan_single_device(const graph::Graph& graph, int devices, int64_t global_batch) {
  Plan plan = plan_data_parallel(graph, 1, global_batch);
  plan.strategy = "single";
  plan.devices = devices;
  return plan;
}

Plan plan_data_parallel(const graph::Graph& graph, int devices, int64_t global_batch) {
  if (devices < 1) throw UserError(fmt::format("devices must be at least 1, got {}", devices));
  if (global_batch < 1) {
    throw UserError(fmt::format("global batch must be at least 1, got {}", global_batch));
  }
  // More devices than samples would leave some with nothing to do: they stay idle.
  const int used = static_cast<int>(std::min<int64_t>(devices, global_batch));
  std::vector<int> ranks(static_cast<size_t>(used));
  for (int r = 0; r < used; ++r) ranks[static_cast<size_t>(r)] = r;
  const std::vector<cost::Shard> shards = even_split(ranks, global_batch);
  Plan plan;
  plan.model = graph.name();
  plan.strategy = "dp";
  plan.global_batch = global_batch;
  plan.devices = devices;
  for (const graph::LayerSpec& layer : graph.layers()) plan.layers.push_back({layer.name, shards});
  return plan;
}

std::string placement_fingerprint(const Plan& plan) {
  std::string text = std::to_string(plan.devices);
  for (const LayerPlacement& layer : plan.layers) {
    for (const cost::Shard& shard : layer.shards) {
      text += fmt::format(";{}:{}-{}", shard.rank, shard.samples.begin, shard.samples.end);
    }
    // A tensor split changes what each rank computes (none: as versions 1 and 2).
    if (layer.split.splits()) text += fmt::format("/{}{}", cost::split_kind_name(layer.split.kind), layer.split.parts);
    text += '|';
  }
  // A pipeline changes which samples run together and in what order (none: as version 1).
  const Pipeline& pipeline = plan.pipeline;
  if (pipeline.micro_batches > 1 || !pipeline.stage_starts.empty()) {
    text += fmt::format("m{}:{}", pipeline.micro_batches, schedule_name(pipeline.schedule));
    if (pipeline.virtual_stages > 1) text += fmt::format(":v{}", pipeline.virtual_stages);
    for (const graph::LayerId start : pipeline.stage_starts) text += fmt::format(":{}", start);
  }
  return util::fnv1a_hex(text);
}

std::string pipeline_text(const plan::Plan& plan) {
  if (plan.pipeline.micro_batches == 1 && plan.stage_count() == 1) return "-";
  std::vector<std::string> firsts;
  for (const graph::LayerId start : plan.pipeline.stage_starts) firsts.push_back(plan.layers.at(static_cast<size_t>(start)).layer);
  const std::string chunks =
      plan.pipeline.virtual_stages > 1 ? fmt::format(", {} a rank", plan.pipeline.virtual_stages) : std::string();
  const std::string stages =
      plan.stage_count() == 1 ? "1 stage"
                              : fmt::format("{} stages{} (from layers {})", plan.stage_count(), chunks, fmt::join(firsts, ", "));
  // (One micro-batch runs the same under either schedule.)
  return fmt::format("{}, {} micro-batch{} of {}{}", stages, plan.pipeline.micro_batches,
                     plan.pipeline.micro_batches == 1 ? "" : "es", plan.micro_batch(),
                     plan.pipeline.micro_batches == 1 ? "" : std::string(", ") + plan::schedule_name(plan.pipeline.schedule));
}

}  // namespace burst::plan
