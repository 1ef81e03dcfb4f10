// The tensor planner: Megatron-style candidates, timed by the evaluator (tensor_planner.h).
#include "burst/planner/tensor_planner.h"

#include "burst/planner/heterogeneous.h"

#include <algorithm>

#include <fmt/format.h>

#include "burst/timing/evaluate.h"
#include "burst/util/error.h"

namespace burst::planner {

// The searches build plans from the plan library's types and rules throughout, and price
// them with the evaluator.
using namespace burst::plan;  // NOLINT(google-build-using-namespace)
using timing::evaluate_plan;
using program::DeviceMemory;
using timing::EvaluateOptions;
using timing::PlanEvaluation;

using cost::SplitKind;

namespace {

// Whether every input of `join` but `from` is a linear `splittable` accepts and only `join`
// reads; those are added to `columns`. True for a layer of one input.
template <typename Splittable>
bool joins_column_linears(const graph::Graph& graph, graph::LayerId join, graph::LayerId from,
                          const Splittable& splittable, std::vector<graph::LayerId>& columns) {
  std::vector<graph::LayerId> partners;
  for (const graph::LayerId input : graph.inputs(join)) {
    if (input == from) continue;
    if (!splittable(input) || graph.consumers(input).size() != 1) return false;
    partners.push_back(input);
  }
  columns.insert(columns.end(), partners.begin(), partners.end());
  return true;
}

// An untied LM head read by the loss alone: Megatron's vocabulary-parallel head and loss
// (the head a column split over the vocabulary, the loss a row split of the logits).
template <typename Splittable>
void split_vocabulary(const graph::Graph& graph, int32_t parts, const Splittable& splittable_linear,
                      std::vector<SplitKind>& kinds) {
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    if (graph.layer(id).op() != graph::OpKind::SoftmaxCrossEntropy) continue;
    const graph::LayerId head = graph.inputs(id).front();
    if (splittable_linear(head) && graph.consumers(head).size() == 1 &&
        plan::tensor_split_refusal(graph, id, {SplitKind::Row, parts}).empty()) {
      kinds[static_cast<size_t>(head)] = SplitKind::Column;
      kinds[static_cast<size_t>(id)] = SplitKind::Row;
    }
  }
}

// Megatron's sequence parallelism: every replicated layer that can run on token slices does.
void split_sequences(const graph::Graph& graph, int32_t parts, std::vector<SplitKind>& kinds) {
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    SplitKind& kind = kinds[static_cast<size_t>(id)];
    if (kind == SplitKind::Replicate && plan::tensor_split_refusal(graph, id, {SplitKind::Sequence, parts}).empty()) {
      kind = SplitKind::Sequence;
    }
  }
}

}  // namespace

std::vector<SplitKind> megatron_splits(const graph::Graph& graph, int32_t parts, bool sequence_parallel) {
  const auto layers = static_cast<graph::LayerId>(graph.size());
  std::vector<SplitKind> kinds(graph.size(), SplitKind::Replicate);
  const auto kind = [&](graph::LayerId id) -> SplitKind& { return kinds[static_cast<size_t>(id)]; };
  for (graph::LayerId id = 0; id < layers; ++id) {
    const graph::OpKind op = graph.layer(id).op();
    if (!weight_split_refusal(graph, id).empty() || op == graph::OpKind::BatchNorm2d ||
        op == graph::OpKind::SoftmaxCrossEntropy) {
      kind(id) = SplitKind::Samples;
    } else if (op == graph::OpKind::SelfAttention &&
               cost::divided_units(graph, id, SplitKind::Heads).count % parts == 0) {
      kind(id) = SplitKind::Heads;
    }
  }
  // Column -> element-wise layers -> row: each layer of the chain read by the next alone. An
  // element-wise join on the way (SwiGLU's silu(gate(x)) * up(x)) takes its other inputs
  // from linears read by it alone, which become column splits too.
  const auto splittable_linear = [&](graph::LayerId id) {
    return graph.layer(id).op() == graph::OpKind::Linear && kind(id) == SplitKind::Replicate &&
           cost::divided_units(graph, id, SplitKind::Column).count % parts == 0;
  };
  for (graph::LayerId first = 0; first < layers; ++first) {
    if (!splittable_linear(first)) continue;
    std::vector<graph::LayerId> chain, columns{first};
    graph::LayerId at = first;
    while (graph.consumers(at).size() == 1) {
      const graph::LayerId next = graph.consumers(at).front();
      if (kind(next) != SplitKind::Replicate) break;
      if (graph.inputs(next).size() == 1 && splittable_linear(next)) {
        for (const graph::LayerId id : columns) kind(id) = SplitKind::Column;
        for (const graph::LayerId id : chain) kind(id) = SplitKind::Features;
        kind(next) = SplitKind::Row;
        break;
      }
      if (!cost::element_wise(graph.layer(next).op()) || !joins_column_linears(graph, next, at, splittable_linear, columns)) {
        break;
      }
      chain.push_back(next);
      at = next;
    }
  }
  split_vocabulary(graph, parts, splittable_linear, kinds);
  if (sequence_parallel) split_sequences(graph, parts, kinds);
  return kinds;
}

namespace {

class TensorPlanner {
 public:
  TensorPlanner(const PlanContext& context, int64_t batch, const TensorOptions& options)
      : context_(context), batch_(batch), options_(options) {}

  TensorPlanResult run() {
    const cluster::Cluster& cluster = context_.network.cluster();
    const int devices = cluster.size();
    const int per_node = cluster.devices_per_node();
    std::vector<std::pair<double, Plan>> estimated;  // (estimate in seconds, candidate)
    for (int32_t parts = 2; parts <= std::min({options_.max_parts, per_node, devices}); parts *= 2) {
      if (options_.parts && parts != *options_.parts) continue;
      const std::vector<SplitKind> kinds = megatron_splits(context_.graph, parts, options_.sequence_parallel);
      const int most_groups = static_cast<int>(std::min<int64_t>(devices / parts, batch_));
      std::vector<int> group_counts;
      for (int groups = 1; groups < most_groups; groups *= 2) group_counts.push_back(groups);
      group_counts.push_back(most_groups);
      for (const int groups : group_counts) {
        // A mixed cluster: each tensor group on one node, so within one kind.
        if (cluster.mixed() && !tensor_groups_within_nodes(cluster, parts, groups)) continue;
        std::optional<Plan> plan = candidate(kinds, parts, groups);
        if (plan) estimated.emplace_back(estimate(*plan, parts, groups), std::move(*plan));
      }
    }
    // The evaluator times the best estimates only (it takes a while on thousands of ranks).
    std::stable_sort(estimated.begin(), estimated.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    if (estimated.size() > static_cast<size_t>(options_.evaluated)) estimated.resize(static_cast<size_t>(options_.evaluated));
    TensorPlanResult result;
    for (auto& [guess, plan] : estimated) {
      const Seconds time = evaluate(plan);
      ++result.timed;
      if (!result.plan || time < result.predicted) {
        result.plan = std::move(plan);
        result.predicted = time;
      }
    }
    return result;
  }

  // A quick estimate of a candidate: every layer's compute at its shard (one part's for a
  // split layer) one after another, its tensor all-reduces, and the weight-gradient
  // all-reduces as if none overlapped backward.
  double estimate(const Plan& plan, int32_t parts, int groups) const {
    const graph::Graph& graph = context_.graph;
    double seconds = 0, split_bytes = 0, sample_bytes = 0;
    std::vector<int> tensor_group(static_cast<size_t>(parts)), part_group, sample_ranks;
    for (int32_t p = 0; p < parts; ++p) tensor_group[static_cast<size_t>(p)] = p;
    for (int g = 0; g < groups; ++g) part_group.push_back(g * parts);
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
      const LayerPlacement& placement = plan.layers[static_cast<size_t>(id)];
      const int64_t shard = placement.shards.front().samples.size();
      const cost::TensorSplit& split = placement.split;
      seconds += context_.cost.require_tensor(graph, id, shard, split).time.total().s();
      const double bytes = static_cast<double>(cost::part_params(graph, id, split)) * cost::kFloatBytes;
      (split.splits() ? split_bytes : sample_bytes) += bytes;
      if (!split.splits()) {
        if (sample_ranks.empty()) {
          for (const cost::Shard& s : placement.shards) sample_ranks.push_back(s.rank);
        }
        continue;
      }
      if (cost::sums_output(split.kind)) {
        seconds += context_.network.allreduce(tensor_group, Bytes(static_cast<double>(shard * graph.info(id).output_bytes))).s();
      }
      if (cost::sums_input_gradient(split.kind)) {
        const graph::LayerId input = graph.inputs(id).at(0);
        seconds += context_.network.allreduce(tensor_group, Bytes(static_cast<double>(shard * graph.info(input).output_bytes))).s();
      }
    }
    if (groups > 1) seconds += context_.network.allreduce(part_group, Bytes(split_bytes)).s();
    std::sort(sample_ranks.begin(), sample_ranks.end());
    if (sample_ranks.size() > 1) seconds += context_.network.allreduce(sample_ranks, Bytes(sample_bytes)).s();
    return seconds;
  }

 private:
  // The plan of `kinds` on `groups` sample groups of `parts` ranks (ranks 0..groups x parts
  // - 1), or none when it splits no layer or does not fit.
  std::optional<Plan> candidate(std::vector<SplitKind> kinds, int32_t parts, int groups) {
    keep_within_amplification(kinds, parts, groups);
    if (std::none_of(kinds.begin(), kinds.end(), cost::divides_weights)) return std::nullopt;
    std::vector<int> ranks(static_cast<size_t>(groups * parts));
    for (size_t r = 0; r < ranks.size(); ++r) ranks[r] = static_cast<int>(r);
    std::vector<int> group_firsts;
    for (int g = 0; g < groups; ++g) group_firsts.push_back(g * parts);
    const std::vector<cost::Shard> group_shards = even_split(group_firsts, batch_);
    std::vector<cost::Shard> split_shards;
    for (const cost::Shard& group : group_shards) {
      for (int32_t p = 0; p < parts; ++p) split_shards.push_back(cost::Shard{group.rank + p, group.samples});
    }
    const int sample_ranks = static_cast<int>(std::min<int64_t>(groups * parts, batch_));
    const std::vector<cost::Shard> sample_shards =
        even_split(std::vector<int>(ranks.begin(), ranks.begin() + sample_ranks), batch_);
    Plan plan;
    plan.model = context_.graph.name();
    plan.strategy = "tensor";
    plan.global_batch = batch_;
    plan.devices = context_.network.cluster().size();
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(context_.graph.size()); ++id) {
      const SplitKind kind = kinds[static_cast<size_t>(id)];
      LayerPlacement placement{context_.graph.layer(id).name, kind == SplitKind::Samples ? sample_shards : split_shards};
      if (kind != SplitKind::Samples) placement.split = cost::TensorSplit{kind, parts};
      plan.layers.push_back(std::move(placement));
    }
    if (options_.capacity) {
      const std::vector<program::DeviceMemory> memory = program::plan_memory(plan, context_.graph, options_.optimizer, options_.program);
      if (!program::fits(memory, *options_.capacity)) return std::nullopt;
    }
    return plan;
  }

  // A divided layer over the amplification limit keeps its weights whole, and so does the
  // rest of its column-row pair (features layers with it).
  void keep_within_amplification(std::vector<SplitKind>& kinds, int32_t parts, int groups) {
    const int64_t shard = (batch_ + groups - 1) / groups;
    const double devices = static_cast<double>(groups) * parts;
    bool pair_over = false;  // the open column's pair is over the limit
    std::vector<graph::LayerId> pair;
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(kinds.size()); ++id) {
      SplitKind& kind = kinds[static_cast<size_t>(id)];
      if (!cost::divides_weights(kind) && kind != SplitKind::Features) continue;
      bool over = false;
      if (cost::divides_weights(kind)) {
        const double whole = context_.cost.require(context_.graph, id, batch_).time.total().s();
        const cost::TensorSplit split{kind, parts};
        const double part = context_.cost.require_tensor(context_.graph, id, shard, split).time.total().s();
        over = whole >= options_.amplification_exempt_below.s() && devices * part > options_.amplification * whole;
      }
      if (kind == SplitKind::Heads) {
        if (over) kind = SplitKind::Replicate;
        continue;
      }
      pair.push_back(id);
      pair_over = pair_over || over;
      if (kind != SplitKind::Row) continue;
      if (pair_over) {
        for (const graph::LayerId member : pair) kinds[static_cast<size_t>(member)] = SplitKind::Replicate;
      }
      pair.clear();
      pair_over = false;
    }
  }

  Seconds evaluate(const Plan& plan) const {
    return evaluate_plan(plan, context_, options_.evaluate_options()).iteration_time;
  }

  const PlanContext& context_;
  int64_t batch_;
  const TensorOptions& options_;
};

}  // namespace

TensorPlanResult plan_tensor(const PlanContext& context, int64_t global_batch, const TensorOptions& options) {
  if (global_batch < 1) throw UserError(fmt::format("global batch must be at least 1, got {}", global_batch));
  if (options.parts) {
    const int parts = *options.parts;
    const int per_node = std::min(context.network.cluster().devices_per_node(), context.network.cluster().size());
    const bool power_of_two = parts >= 2 && (parts & (parts - 1)) == 0;
    if (!power_of_two || parts > std::min(options.max_parts, per_node)) {
      throw UserError(fmt::format("--tensor-parallel {}: the tensor search splits layers into groups of 2, 4, ... up "
                                  "to {} (within a node of {} devices); --strategy 3d takes other sizes",
                                  parts, std::min(options.max_parts, per_node), per_node));
    }
  }
  return TensorPlanner(context, global_batch, options).run();
}

}  // namespace burst::planner
