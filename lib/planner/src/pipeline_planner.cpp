#include "burst/planner/pipeline_planner.h"

#include "burst/planner/heterogeneous.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "burst/timing/evaluate.h"
#include "burst/util/error.h"
#include "stage_partition.h"

namespace burst::planner {

// The searches build plans from the plan library's types and rules throughout, and price
// them with the evaluator.
using namespace burst::plan;  // NOLINT(google-build-using-namespace)
using timing::evaluate_plan;
using program::DeviceMemory;
using timing::EvaluateOptions;
using timing::PlanEvaluation;

std::vector<graph::LayerId> valid_stage_starts(const graph::Graph& graph) {
  const std::vector<BoundaryCrossing> crossings = boundary_crossings(graph);
  std::vector<graph::LayerId> starts;
  for (size_t c = 1; c < crossings.size(); ++c) {
    if (crossings[c].count == 1) starts.push_back(static_cast<graph::LayerId>(c));
  }
  return starts;
}

namespace {

// One (stages, micro-batches) candidate: its boundaries and its estimate.
struct Candidate {
  int stages = 1;
  int64_t micro_batches = 1;
  int devices_per_stage = 1;  // ranks of each stage (those beyond stages x this stay idle)
  std::vector<graph::LayerId> starts;
  double estimate_s = 0;
};

// Forward + backward time of every layer at one shard size.
std::vector<double> layer_times(const PlanContext& context, int64_t shard) {
  std::vector<double> times;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(context.graph.size()); ++id) {
    times.push_back(context.cost.require(context.graph, id, shard).time.total().s());
  }
  return times;
}

bool has_batchnorm(const graph::Graph& graph) {
  return std::any_of(graph.layers().begin(), graph.layers().end(),
                     [](const graph::LayerSpec& layer) { return layer.op() == graph::OpKind::BatchNorm2d; });
}

class PipelineSearch {
 public:
  PipelineSearch(const PlanContext& context, int64_t global_batch, const PipelineOptions& options)
      : context_(context), graph_(context.graph), batch_(global_batch), options_(options),
        devices_(context.network.cluster().size()), cuts_(valid_stage_starts(context.graph)) {
    const std::vector<BoundaryCrossing> crossings = boundary_crossings(context.graph);
    for (const graph::LayerId start : cuts_) crossing_[start] = crossings[static_cast<size_t>(start)].first;
  }

  PipelinePlanResult run() {
    std::vector<Candidate> candidates = estimate_all();
    std::sort(candidates.begin(), candidates.end(),
              [](const Candidate& a, const Candidate& b) { return a.estimate_s < b.estimate_s; });
    PipelinePlanResult result;
    result.estimated = static_cast<int>(candidates.size());
    int fitting = 0;
    for (const Candidate& candidate : candidates) {
      if (fitting >= options_.evaluated) break;
      bool fits = false;
      for (const Schedule schedule : options_.schedules) {
        Plan plan = build(candidate, schedule);
        std::optional<Seconds> time;  // the data-parallel stages', when timed
        if (options_.data_parallel_stages && fits_memory(plan)) {
          fits = true;
          time = timed(plan, result);
          keep(result.plan, result.predicted, plan, *time);
        }
        if (!options_.burst_stages) continue;
        Plan hybrid = plan;
        hybrid.strategy = "hybrid";
        place_stages_by_burst(hybrid, candidate.devices_per_stage);
        if (!fits_memory(hybrid)) continue;
        fits = true;
        // Where the burst plan is data parallel, the hybrid is the plan just timed.
        const bool same = time && placement_fingerprint(hybrid) == placement_fingerprint(plan);
        const Seconds hybrid_time = same ? *time : timed(hybrid, result);
        keep(result.hybrid, result.hybrid_predicted, hybrid, hybrid_time);
      }
      if (fits) ++fitting;
    }
    return result;
  }

 private:
  Seconds timed(const Plan& plan, PipelinePlanResult& result) const {
    ++result.timed;
    return evaluate_plan(plan, context_, options_.evaluate_options()).iteration_time;
  }
  static void keep(std::optional<Plan>& best, Seconds& best_time, const Plan& plan, Seconds time) {
    if (best && !(time < best_time)) return;
    best = plan;
    best_time = time;
  }

 private:
  // Every (stages, micro-batches) pair with its best boundaries and estimate; one stage
  // only with several micro-batches (one micro-batch on one stage is data parallelism).
  std::vector<Candidate> estimate_all() {
    std::vector<Candidate> candidates;
    const bool micro_batching = !has_batchnorm(graph_);
    const auto layers = static_cast<graph::LayerId>(graph_.size());
    for (int64_t m = 1; m <= batch_; ++m) {
      if (batch_ % m != 0 || (m > 1 && !micro_batching)) continue;
      const int64_t micro_batch = batch_ / m;
      for (int p = 1; p <= std::min(options_.max_stages, devices_); ++p) {
        if ((p == 1 && m == 1) || (options_.stages && p != *options_.stages)) continue;
        const int per_stage = static_cast<int>(std::min<int64_t>(devices_ / p, micro_batch));
        const Partitions& partitions = partitions_at(ceil_div(micro_batch, per_stage), layers);
        if (p > partitions.max_stages()) break;
        Candidate candidate;
        candidate.stages = p;
        candidate.micro_batches = m;
        candidate.devices_per_stage = per_stage;
        auto [slowest_stage_s, starts] = context_.heterogeneous()
                                              ? kinded_partition(p, per_stage, ceil_div(micro_batch, per_stage))
                                              : partitions.best(p);
        candidate.starts = std::move(starts);
        candidate.estimate_s = estimate(candidate, slowest_stage_s, micro_batch);
        candidates.push_back(std::move(candidate));
      }
    }
    return candidates;
  }

  static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

  // A mixed cluster: stage s of `stages` (ranks s x per_stage ..) at the slowest kind among
  // its ranks, and the boundaries (among the valid cuts) that minimise the slowest stage
  // with each stage's own times: slower kinds get fewer layers. {slowest stage, starts}.
  std::pair<double, std::vector<graph::LayerId>> kinded_partition(int stages, int per_stage, int64_t shard) {
    std::vector<const StageTimes*> times;
    for (int stage = 0; stage < stages; ++stage) times.push_back(&kind_times(slowest_kind(stage * per_stage, per_stage), shard));
    const LinearPartition partition(cuts_, static_cast<graph::LayerId>(graph_.size()), stages,
                                    [&](size_t stage, graph::LayerId begin, graph::LayerId end) {
                                      return times[stage - 1]->between(begin, end);
                                    });
    return partition.best(stages);
  }

  // The kind among ranks first..first+count-1 whose whole model is slowest at one sample.
  int slowest_kind(int first, int count) {
    const cluster::Cluster& cluster = context_.network.cluster();
    int slowest = cluster.kind_index(first);
    for (int rank = first + 1; rank < first + count; ++rank) {
      const int kind = cluster.kind_index(rank);
      if (kind != slowest && kind_times(kind, 1).between(0, static_cast<graph::LayerId>(graph_.size())) >
                                 kind_times(slowest, 1).between(0, static_cast<graph::LayerId>(graph_.size()))) {
        slowest = kind;
      }
    }
    return slowest;
  }

  const StageTimes& kind_times(int kind, int64_t shard) {
    auto found = kind_times_.find({kind, shard});
    if (found == kind_times_.end()) {
      std::vector<double> times;
      const cost::CostModel& model = context_.cost_of_kind(kind);
      for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph_.size()); ++id) {
        times.push_back(model.require(graph_, id, shard).time.total().s());
      }
      found = kind_times_.emplace(std::make_pair(kind, shard), StageTimes(times)).first;
    }
    return found->second;
  }

  const Partitions& partitions_at(int64_t shard, graph::LayerId layers) {
    auto found = partitions_.find(shard);
    if (found == partitions_.end()) {
      const StageTimes times(layer_times(context_, shard));
      found = partitions_.emplace(shard, Partitions(times, cuts_, layers, options_.max_stages)).first;
    }
    return found->second;
  }

  // (m + p - 1) x the slowest stage, a message each way per boundary (the crossing output
  // at one rank's shard, between the first ranks of the two stages) and the slowest stage's
  // gradient all-reduce (fp32, over its ranks) after the last backward.
  double estimate(const Candidate& candidate, double slowest_stage_s, int64_t micro_batch) const {
    const int64_t shard = ceil_div(micro_batch, candidate.devices_per_stage);
    double messages_s = 0;
    for (size_t s = 0; s < candidate.starts.size(); ++s) {
      const graph::LayerId crossing = crossing_.at(candidate.starts[s]);
      const Bytes bytes(static_cast<double>(graph_.info(crossing).output_bytes * shard));
      const int from = static_cast<int>(s) * candidate.devices_per_stage;
      messages_s += 2 * context_.network.point_to_point(from, from + candidate.devices_per_stage, bytes).s();
    }
    double allreduce_s = 0;
    if (candidate.devices_per_stage > 1) {
      std::vector<int> ranks(static_cast<size_t>(candidate.devices_per_stage));
      for (int stage = 0; stage < candidate.stages; ++stage) {
        for (int r = 0; r < candidate.devices_per_stage; ++r) {
          ranks[static_cast<size_t>(r)] = stage * candidate.devices_per_stage + r;
        }
        const graph::LayerId begin = stage == 0 ? 0 : candidate.starts[static_cast<size_t>(stage - 1)];
        const graph::LayerId end = stage + 1 < candidate.stages ? candidate.starts[static_cast<size_t>(stage)]
                                                                 : static_cast<graph::LayerId>(graph_.size());
        int64_t params = 0;
        for (graph::LayerId id = begin; id < end; ++id) params += graph_.info(id).params;
        allreduce_s = std::max(allreduce_s, context_.network.allreduce(ranks, Bytes(4.0 * params)).s());
      }
    }
    return static_cast<double>(candidate.micro_batches + candidate.stages - 1) * slowest_stage_s + messages_s +
           allreduce_s;
  }

  Plan build(const Candidate& candidate, Schedule schedule) {
    Plan plan;
    plan.model = graph_.name();
    plan.strategy = "pipeline";
    plan.global_batch = batch_;
    plan.devices = devices_;
    plan.pipeline.micro_batches = candidate.micro_batches;
    plan.pipeline.schedule = schedule;
    plan.pipeline.stage_starts = candidate.starts;
    const int64_t micro_batch = batch_ / candidate.micro_batches;
    std::vector<std::vector<cost::Shard>> stage_shards;
    for (int stage = 0; stage < candidate.stages; ++stage) {
      std::vector<int> ranks;
      for (int r = 0; r < candidate.devices_per_stage; ++r) ranks.push_back(stage * candidate.devices_per_stage + r);
      stage_shards.push_back(even_split(ranks, micro_batch));
    }
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph_.size()); ++id) {
      plan.layers.push_back({graph_.layer(id).name, stage_shards[static_cast<size_t>(plan.stage_of(id))]});
    }
    return share_by_speed(context_, std::move(plan));  // a mixed cluster: each stage's shares by its kinds
  }

  // The hybrid: every layer takes its placement in the burst plan of the whole graph at the
  // micro-batch on the first `per_stage` devices, moved to its stage's ranks.
  void place_stages_by_burst(Plan& plan, int per_stage) {
    const Plan& burst = burst_plan(per_stage, plan.micro_batch());
    for (size_t id = 0; id < plan.layers.size(); ++id) {
      const int offset = plan.stage_of(static_cast<graph::LayerId>(id)) * per_stage;
      std::vector<cost::Shard> shards = burst.layers[id].shards;
      for (cost::Shard& shard : shards) shard.rank += offset;
      plan.layers[id].shards = std::move(shards);
    }
    plan = share_by_speed(context_, std::move(plan));
  }
  const Plan& burst_plan(int devices, int64_t micro_batch) {
    const std::pair<int, int64_t> key{devices, micro_batch};
    auto found = burst_plans_.find(key);
    if (found == burst_plans_.end()) {
      const cost::NetworkModel network{context_.network.cluster().first_ranks(devices)};
      const PlanContext stage_context{graph_, context_.cost, network, context_.kind_costs, context_.kind_power};
      BurstOptions stage_burst = options_.burst;
      stage_burst.search() = options_.search();  // the pipeline's step, memory and timing
      found = burst_plans_.emplace(key, plan_burst(stage_context, micro_batch, stage_burst)).first;
    }
    return found->second;
  }

  bool fits_memory(const Plan& plan) const {
    if (!options_.capacity) return true;
    const std::vector<program::DeviceMemory> memory = program::plan_memory(plan, graph_, options_.optimizer, options_.program);
    return program::fits(memory, *options_.capacity);
  }

  const PlanContext& context_;
  const graph::Graph& graph_;
  const int64_t batch_;
  const PipelineOptions& options_;
  const int devices_;
  const std::vector<graph::LayerId> cuts_;
  std::map<graph::LayerId, graph::LayerId> crossing_;  // by valid start: the layer whose output crosses
  std::map<int64_t, Partitions> partitions_;                  // by shard size
  std::map<std::pair<int, int64_t>, StageTimes> kind_times_;  // mixed: (kind, shard) -> layer times
  std::map<std::pair<int, int64_t>, Plan> burst_plans_;  // by (devices, micro-batch): the hybrid's
};

}  // namespace

PipelinePlanResult plan_pipeline(const PlanContext& context, int64_t global_batch, const PipelineOptions& options) {
  if (global_batch < 1) throw UserError(fmt::format("global batch must be at least 1, got {}", global_batch));
  if (options.max_stages < 1 || options.evaluated < 1 || options.schedules.empty() ||
      !(options.data_parallel_stages || options.burst_stages)) {
    throw UserError(
        "the pipeline planner needs at least one stage, one schedule, one candidate to time and one kind of stage");
  }
  return PipelineSearch(context, global_batch, options).run();
}

}  // namespace burst::planner
