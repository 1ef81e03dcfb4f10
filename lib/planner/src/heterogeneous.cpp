#include "burst/planner/heterogeneous.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <limits>
#include <queue>
#include <tuple>

#include <fmt/format.h>

#include "burst/program/step_program.h"
#include "burst/timing/evaluate.h"
#include "burst/util/error.h"

namespace burst::planner {

std::vector<int64_t> equal_finish_shares(int ranks, int64_t batch, const std::function<double(int, int64_t)>& time) {
  BURST_ASSERT(ranks >= 1 && batch >= 0, fmt::format("sharing {} samples among {} ranks", batch, ranks));
  std::vector<int64_t> shares(static_cast<size_t>(ranks), 0);
  // (time after one more sample, rank): the smallest first, the lower rank on ties.
  using Next = std::pair<double, int>;
  std::priority_queue<Next, std::vector<Next>, std::greater<Next>> next;
  if (batch == 0) return shares;
  for (int rank = 0; rank < ranks; ++rank) next.emplace(time(rank, 1), rank);
  for (int64_t given = 0; given < batch; ++given) {
    const int rank = next.top().second;
    next.pop();
    const int64_t share = ++shares[static_cast<size_t>(rank)];
    if (given + 1 < batch) next.emplace(time(rank, share + 1), rank);  // never asks past `batch`
  }
  return shares;
}

namespace {

double layer_total(const plan::PlanContext& context, int kind, graph::LayerId layer, int64_t samples) {
  if (samples <= 0) return 0;
  return context.cost_of_kind(kind).require(context.graph, layer, samples).time.total().s();
}

double model_total(const plan::PlanContext& context, int kind, int64_t samples) {
  double total = 0;
  for (graph::LayerId layer = 0; layer < static_cast<graph::LayerId>(context.graph.size()); ++layer) {
    total += layer_total(context, kind, layer, samples);
  }
  return total;
}

// Shards of `shares` on `ranks` in order, leaving out ranks with none.
std::vector<cost::Shard> contiguous_shards(const std::vector<int>& ranks, const std::vector<int64_t>& shares) {
  std::vector<cost::Shard> shards;
  int64_t begin = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (shares[i] == 0) continue;
    shards.push_back(cost::Shard{ranks[i], cost::SampleRange{begin, begin + shares[i]}});
    begin += shares[i];
  }
  return shards;
}

// Shares of `batch` on `ranks` by a time per (kind, samples), asked once per (kind, samples).
std::vector<int64_t> shares_by_kind(const plan::PlanContext& context, const std::vector<int>& ranks, int64_t batch,
                                    const std::function<double(int, int64_t)>& kind_time) {
  const cluster::Cluster& cluster = context.network.cluster();
  std::vector<int> kind(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) kind[i] = cluster.kind_index(ranks[i]);
  std::map<std::pair<int, int64_t>, double> known;
  auto time = [&](int i, int64_t samples) {
    const auto key = std::make_pair(kind[static_cast<size_t>(i)], samples);
    auto found = known.find(key);
    if (found == known.end()) found = known.emplace(key, kind_time(key.first, samples)).first;
    return found->second;
  };
  return equal_finish_shares(static_cast<int>(ranks.size()), batch, time);
}

std::vector<int> all_ranks(const plan::PlanContext& context) {
  std::vector<int> ranks(static_cast<size_t>(context.network.cluster().size()));
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

plan::Plan empty_plan(const plan::PlanContext& context, int64_t global_batch, const char* strategy) {
  plan::Plan plan;
  plan.model = context.graph.name();
  plan.strategy = strategy;
  plan.global_batch = global_batch;
  plan.devices = context.network.cluster().size();
  return plan;
}

}  // namespace

std::vector<int> kinds_fastest_first(const plan::PlanContext& context, int64_t per_device_batch,
                                     const std::vector<double>& memory_of_kind) {
  const int kinds = static_cast<int>(context.network.cluster().kinds().size());
  std::vector<double> time(static_cast<size_t>(kinds));
  for (int kind = 0; kind < kinds; ++kind) time[static_cast<size_t>(kind)] = model_total(context, kind, per_device_batch);
  std::vector<int> order(static_cast<size_t>(kinds));
  std::iota(order.begin(), order.end(), 0);
  auto memory = [&](int kind) { return memory_of_kind.empty() ? 0.0 : memory_of_kind[static_cast<size_t>(kind)]; };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return std::make_tuple(time[static_cast<size_t>(a)], -memory(a)) < std::make_tuple(time[static_cast<size_t>(b)], -memory(b));
  });
  return order;
}

std::vector<int> rank_order(const plan::PlanContext& context, int64_t global_batch,
                            const std::vector<double>& memory_of_kind) {
  const cluster::Cluster& cluster = context.network.cluster();
  if (!context.heterogeneous()) return all_ranks(context);
  const int64_t per_device = std::max<int64_t>(1, global_batch / cluster.size());
  std::vector<int> order;
  for (const int kind : kinds_fastest_first(context, per_device, memory_of_kind)) {
    for (const int rank : cluster.ranks_of_kind(kind)) order.push_back(rank);
  }
  return order;
}

plan::Plan plan_one_ratio_data_parallel(const plan::PlanContext& context, int64_t global_batch) {
  const std::vector<int> ranks = all_ranks(context);
  const auto shares = shares_by_kind(context, ranks, global_batch,
                                     [&](int kind, int64_t samples) { return model_total(context, kind, samples); });
  plan::Plan plan = empty_plan(context, global_batch, "dp");
  const std::vector<cost::Shard> shards = contiguous_shards(ranks, shares);
  for (const graph::LayerSpec& layer : context.graph.layers()) plan.layers.emplace_back(layer.name, shards);
  return plan;
}

plan::Plan plan_layer_ratio_data_parallel(const plan::PlanContext& context, int64_t global_batch) {
  const std::vector<int> ranks = all_ranks(context);
  plan::Plan plan = empty_plan(context, global_batch, "dp");
  for (graph::LayerId layer = 0; layer < static_cast<graph::LayerId>(context.graph.size()); ++layer) {
    plan.layers.emplace_back(context.graph.layer(layer).name, plan::even_split(ranks, global_batch));
  }
  return share_by_speed(context, std::move(plan));
}

namespace {

// One run of layers first..last (graph order) on `ranks`, cut into blocks (share_by_speed).
class RunBlocks {
 public:
  RunBlocks(const plan::PlanContext& context, std::vector<int> ranks, graph::LayerId first, graph::LayerId last,
            int64_t batch)
      : context_(context), ranks_(std::move(ranks)), first_(first), layers_(last - first + 1), batch_(batch) {
    const cluster::Cluster& cluster = context.network.cluster();
    for (const int rank : ranks_) kind_.push_back(cluster.kind_index(rank));
    prefix_.assign(cluster.kinds().size(), {});
  }

  // The layers' shards, block by block.
  std::vector<std::vector<cost::Shard>> solve() {
    const int n = layers_;
    std::vector<double> best(static_cast<size_t>(n) + 1, 0.0);  // best[j]: layers 0..j-1 blocked
    std::vector<int> start(static_cast<size_t>(n) + 1, 0);        // start[j]: first layer of the last block
    for (int j = 1; j <= n; ++j) {
      best[static_cast<size_t>(j)] = std::numeric_limits<double>::infinity();
      for (int i = 0; i < j; ++i) {
        const std::vector<int64_t>& block = shares(i, j);
        double cost = best[static_cast<size_t>(i)] + block_time(i, j, block);
        if (i > 0) cost += reshard_time(i - 1, shares(start[static_cast<size_t>(i)], i), block);
        if (cost < best[static_cast<size_t>(j)]) {
          best[static_cast<size_t>(j)] = cost;
          start[static_cast<size_t>(j)] = i;
        }
      }
    }
    std::vector<std::vector<cost::Shard>> shards(static_cast<size_t>(n));
    for (int j = n; j > 0;) {
      const int i = start[static_cast<size_t>(j)];
      const std::vector<cost::Shard> block = contiguous_shards(ranks_, shares(i, j));
      for (int l = i; l < j; ++l) shards[static_cast<size_t>(l)] = block;
      j = i;
    }
    return shards;
  }

 private:
  // Σ of layers [i, j)'s forward + backward at `samples` on kind `kind`.
  double time(int kind, int i, int j, int64_t samples) {
    if (samples <= 0) return 0;
    auto& table = prefix_[static_cast<size_t>(kind)];
    if (table.empty()) table.assign(static_cast<size_t>(batch_), {});
    auto& sums = table[static_cast<size_t>(samples - 1)];
    if (sums.empty()) {
      sums.assign(static_cast<size_t>(layers_) + 1, 0.0);
      for (int l = 0; l < layers_; ++l) {
        sums[static_cast<size_t>(l) + 1] = sums[static_cast<size_t>(l)] + layer_total(context_, kind, first_ + l, samples);
      }
    }
    return sums[static_cast<size_t>(j)] - sums[static_cast<size_t>(i)];
  }

  const std::vector<int64_t>& shares(int i, int j) {
    const auto key = std::make_pair(i, j);
    auto found = shares_.find(key);
    if (found != shares_.end()) return found->second;
    auto rank_time = [&](int r, int64_t samples) { return time(kind_[static_cast<size_t>(r)], i, j, samples); };
    return shares_.emplace(key, equal_finish_shares(static_cast<int>(ranks_.size()), batch_, rank_time)).first->second;
  }

  double block_time(int i, int j, const std::vector<int64_t>& shares) {
    double slowest = 0;
    for (size_t r = 0; r < ranks_.size(); ++r) slowest = std::max(slowest, time(kind_[r], i, j, shares[r]));
    return slowest;
  }

  // Layer `producer` (index in the run)'s output from one blocking's shards to another's,
  // and its gradient back when one flows.
  double reshard_time(int producer, const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
    if (from == to) return 0;
    const graph::LayerId layer = first_ + producer;
    const Bytes per_sample(static_cast<double>(context_.graph.info(layer).output_bytes));
    const auto transfers = cost::reshard_transfers(contiguous_shards(ranks_, from), contiguous_shards(ranks_, to));
    const double one_way = context_.network.reshard(transfers, per_sample).s();
    return program::carries_gradient(context_.graph, layer) ? 2 * one_way : one_way;
  }

  const plan::PlanContext& context_;
  std::vector<int> ranks_;
  std::vector<int> kind_;
  graph::LayerId first_;
  int layers_;
  int64_t batch_;
  std::vector<std::vector<std::vector<double>>> prefix_;  // [kind][samples - 1][layer]: prefix sums
  std::map<std::pair<int, int>, std::vector<int64_t>> shares_;
};

std::vector<int> shard_ranks(const plan::LayerPlacement& placement) {
  std::vector<int> ranks;
  for (const cost::Shard& shard : placement.shards) ranks.push_back(shard.rank);
  return ranks;
}

}  // namespace

plan::Plan share_by_speed(const plan::PlanContext& context, plan::Plan plan, ShareCache* cache) {
  if (!context.heterogeneous()) return plan;
  const auto layers = static_cast<graph::LayerId>(plan.layers.size());
  for (graph::LayerId first = 0; first < layers;) {
    const std::vector<int> ranks = shard_ranks(plan.layers[static_cast<size_t>(first)]);
    graph::LayerId last = first;
    while (last + 1 < layers && plan.layers[static_cast<size_t>(last) + 1].split == plan.layers[static_cast<size_t>(first)].split &&
           shard_ranks(plan.layers[static_cast<size_t>(last) + 1]) == ranks) {
      ++last;
    }
    if (!plan.layers[static_cast<size_t>(first)].split.splits()) {
      std::vector<std::vector<cost::Shard>> solved;
      const auto key = std::make_tuple(first, last, ranks);
      if (cache != nullptr && cache->runs.count(key) != 0) {
        solved = cache->runs.at(key);
      } else {
        solved = RunBlocks(context, ranks, first, last, plan.micro_batch()).solve();
        if (cache != nullptr) cache->runs.emplace(key, solved);
      }
      const auto& shards = solved;
      for (graph::LayerId id = first; id <= last; ++id) plan.layers[static_cast<size_t>(id)].shards = shards[static_cast<size_t>(id - first)];
    }
    first = last + 1;
  }
  return plan;
}

plan::Plan plan_one_kind(const plan::PlanContext& context, int kind, int64_t global_batch, const BurstOptions& options) {
  const cluster::Cluster& cluster = context.network.cluster();
  cluster::MixedClusterSpec spec{fmt::format("{}-only", cluster.kinds().at(static_cast<size_t>(kind))), {},
                                 cluster.between_groups()};
  for (size_t g = 0; g < cluster.groups().size(); ++g) {
    if (cluster.kind_index(cluster.first_rank_of_group(static_cast<int>(g))) == kind) spec.groups.push_back(cluster.groups()[g]);
  }
  if (spec.groups.size() == 1) spec.between_groups.reset();
  const cost::NetworkModel network{cluster::Cluster(std::move(spec))};
  std::vector<std::optional<cost::PowerSpec>> power;
  if (const cost::PowerSpec* kind_power = context.power_of_kind(kind)) power.emplace_back(*kind_power);
  const plan::PlanContext one_kind{context.graph, context.cost_of_kind(kind), network, {}, std::move(power)};
  plan::Plan plan = plan_burst(one_kind, global_batch, options);
  const std::vector<int> ranks = cluster.ranks_of_kind(kind);
  for (plan::LayerPlacement& placement : plan.layers) {
    for (cost::Shard& shard : placement.shards) shard.rank = ranks.at(static_cast<size_t>(shard.rank));
  }
  plan.devices = cluster.size();
  return plan;
}

bool tensor_groups_within_nodes(const cluster::Cluster& cluster, int size, int groups) {
  for (int group = 0; group < groups; ++group) {
    const int first = group * size;
    const int last = first + size - 1;
    if (last >= cluster.size() || cluster.node_of(first) != cluster.node_of(last)) return false;
  }
  return true;
}

MixedBaselines mixed_baselines(const plan::PlanContext& context, int64_t global_batch, const BurstOptions& options) {
  const int devices = context.network.cluster().size();
  const timing::EvaluateOptions evaluation = options.evaluate_options();
  MixedBaselines baselines{0, {}, plan::plan_data_parallel(context.graph, devices, global_batch),
                           plan_one_ratio_data_parallel(context, global_batch)};
  double best = std::numeric_limits<double>::infinity();
  for (int kind = 0; kind < static_cast<int>(context.network.cluster().kinds().size()); ++kind) {
    plan::Plan alone = plan_one_kind(context, kind, global_batch, options);
    const double time = timing::evaluate_plan(alone, context, evaluation).iteration_time.s();
    if (time < best) {
      best = time;
      baselines.alone_kind = kind;
      baselines.alone = std::move(alone);
    }
  }
  return baselines;
}

std::vector<KindUsage> usage_by_kind(const plan::PlanContext& context, const plan::Plan& plan, Seconds iteration) {
  const cluster::Cluster& cluster = context.network.cluster();
  std::vector<double> compute(static_cast<size_t>(cluster.size()), 0.0);
  std::vector<double> samples(cluster.kinds().size(), 0.0);
  double all_samples = 0;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(plan.layers.size()); ++id) {
    for (const cost::Shard& shard : plan.layers[static_cast<size_t>(id)].shards) {
      const cost::CostModel& model = context.cost_of(shard.rank);
      compute[static_cast<size_t>(shard.rank)] += model.require(context.graph, id, shard.samples.size()).time.total().s() +
                                                  model.update_or_zero(context.graph, id).s();
      samples[static_cast<size_t>(cluster.kind_index(shard.rank))] += static_cast<double>(shard.samples.size());
      all_samples += static_cast<double>(shard.samples.size());
    }
  }
  std::vector<KindUsage> usage;
  for (int kind = 0; kind < static_cast<int>(cluster.kinds().size()); ++kind) {
    KindUsage entry;
    entry.kind = cluster.kinds()[static_cast<size_t>(kind)];
    double busy = 0;
    for (const int rank : cluster.ranks_of_kind(kind)) {
      ++entry.devices;
      if (compute[static_cast<size_t>(rank)] > 0) ++entry.devices_used;
      busy += compute[static_cast<size_t>(rank)];
    }
    entry.sample_share = all_samples > 0 ? samples[static_cast<size_t>(kind)] / all_samples : 0;
    entry.compute = Seconds(busy / entry.devices);
    entry.idle = Seconds(std::max(0.0, iteration.s() - entry.compute.s()));
    entry.utilisation = iteration.s() > 0 ? entry.compute.s() / iteration.s() : 0;
    usage.push_back(std::move(entry));
  }
  return usage;
}

}  // namespace burst::planner
