// The 3-D search (three_d_planner.h).
#include "burst/planner/three_d_planner.h"

#include "burst/planner/heterogeneous.h"

#include <algorithm>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "burst/cost/tensor_split.h"
#include "burst/graph/language_model.h"
#include "burst/planner/pipeline_planner.h"
#include "burst/timing/evaluate.h"
#include "burst/util/error.h"
#include "three_d_estimate.h"

namespace burst::planner {
namespace {

using cost::Recompute;

std::vector<int> powers_of_two_dividing(int64_t value, int64_t most) {
  std::vector<int> sizes;
  for (int64_t size = 1; size <= std::min(value, most); size *= 2) {
    if (value % size == 0) sizes.push_back(static_cast<int>(size));
  }
  return sizes;
}

std::vector<int> divisors(int value, int most) {
  std::vector<int> found;
  for (int d = 1; d <= std::min(value, most); ++d) {
    if (value % d == 0) found.push_back(d);
  }
  return found;
}

// One shape with its step options and what the search knows of it (its plan is
// plan_shape's, made again for the few that are timed: thousands of plans of thousands of
// ranks are not kept).
struct ShapeCandidate {
  ParallelShape shape;
  program::ProgramOptions program;
  double estimate_s = 0;
};

class ThreeDSearch {
 public:
  ThreeDSearch(const plan::PlanContext& context, int64_t global_batch, const ThreeDOptions& options)
      : context_(context), graph_(context.graph), batch_(global_batch), options_(options),
        devices_(context.network.cluster().size()), stages_(static_cast<int>(valid_stage_starts(graph_).size()) + 1) {}

  ThreeDResult run() {
    std::vector<ShapeCandidate> fitting;
    for (const ParallelShape& shape : shapes()) add_fitting(shape, fitting);
    if (fitting.empty()) throw_nothing_fits();
    std::stable_sort(fitting.begin(), fitting.end(),
                     [](const ShapeCandidate& a, const ShapeCandidate& b) { return a.estimate_s < b.estimate_s; });
    ThreeDResult result;
    result.candidates = considered_;
    result.fitting = static_cast<int>(fitting.size());
    const size_t timed = std::min(fitting.size(), static_cast<size_t>(std::max(1, options_.evaluated)));
    for (size_t i = 0; i < timed; ++i) {
      timing::EvaluateOptions evaluate = options_.evaluate_options();
      evaluate.program = fitting[i].program;
      plan::Plan plan = plan_shape(context_, batch_, fitting[i].shape);
      const Seconds time = timing::evaluate_plan(plan, context_, evaluate).iteration_time;
      if (i == 0 || time < result.predicted) {
        result.predicted = time;
        result.plan = std::move(plan);
        result.shape = fitting[i].shape;
        result.program = fitting[i].program;
      }
    }
    return result;
  }

 private:
  std::vector<int> tensor_sizes() const {
    if (options_.pins.tensor) return {*options_.pins.tensor};
    if (!has_attention(graph_)) return {1};
    std::vector<int> sizes;
    const int most = std::min(options_.max_tensor, context_.network.cluster().devices_per_node());
    for (int t = 1; t <= most; t *= 2) {
      // On a mixed cluster every tensor group must lie on one node, so within one kind.
      const cluster::Cluster& cluster = context_.network.cluster();
      if (devices_ % t == 0 && divides_heads(t) && (!cluster.mixed() || tensor_groups_within_nodes(cluster, t, devices_ / t))) {
        sizes.push_back(t);
      }
    }
    return sizes;
  }
  bool divides_heads(int t) const {
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph_.size()); ++id) {
      if (graph_.layer(id).op() != graph::OpKind::SelfAttention) continue;
      if (cost::divided_units(graph_, id, cost::SplitKind::Heads).count % t != 0) return false;
    }
    return true;
  }

  // Every (t, p, d, b) the pins allow; a pinned combination that cannot be is refused with
  // check_shape's reason.
  std::vector<ParallelShape> shapes() const {
    std::vector<ParallelShape> found;
    for (const int t : tensor_sizes()) {
      for (const int c : context_sizes()) {
        if (devices_ % (t * c) == 0) add_shapes(t, c, found);
      }
    }
    if (found.empty()) check_pins_alone();
    return found;
  }
  // Every (p, d, b, SP, schedule, E) for tensor groups of t and context groups of c.
  void add_shapes(int t, int c, std::vector<ParallelShape>& found) const {
    const int width = t * c;
    const std::vector<int> stage_counts =
        options_.pins.pipeline ? std::vector<int>{*options_.pins.pipeline} : divisors(devices_ / width, stages_);
    for (const int p : stage_counts) {
      if ((devices_ / width) % p != 0) continue;
      const int d = devices_ / width / p;
      if (batch_ % d != 0) continue;
      const std::vector<int> micro = options_.pins.micro_batch
                                         ? std::vector<int>{static_cast<int>(*options_.pins.micro_batch)}
                                         : powers_of_two_dividing(batch_ / d, kLargestMicroBatch);
      for (const int b : micro) {
        for (const bool sequence : sequence_choices(t)) {
          for (const auto& [schedule, v] : schedule_choices(p)) {
            ParallelShape shape{t, p, d, b, schedule, sequence, v};
            shape.context = c;
            for (const int e : expert_sizes(t, c, d)) {
              shape.experts = e;
              add_shape(shape, found);
            }
          }
        }
      }
    }
  }
  void add_shape(const ParallelShape& shape, std::vector<ParallelShape>& found) const {
    // (A V the search chose itself is dropped quietly where it cannot be.)
    if (pinned_all() && (shape.virtual_stages == 1 || options_.pins.virtual_stages)) {
      check_shape(graph_, devices_, batch_, shape);
    }
    if (shape_fits_graph(shape)) found.push_back(shape);
  }
  // E as pinned, else 1 and, for a model with moe layers and neither tensor nor context
  // groups, the powers of two up to 8 dividing d and every moe layer's experts.
  std::vector<int> expert_sizes(int t, int c, int d) const {
    if (options_.pins.expert_parallel) return {*options_.pins.expert_parallel};
    std::vector<int> sizes{1};
    if (t > 1 || c > 1) return sizes;
    int64_t experts = 0;
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph_.size()); ++id) {
      if (graph_.layer(id).op() == graph::OpKind::Moe) experts = std::get<graph::MoeAttrs>(graph_.layer(id).attrs).experts;
    }
    constexpr int kLargestExpertGroup = 8;
    for (int e = 2; experts > 0 && e <= kLargestExpertGroup; e *= 2) {
      if (d % e == 0 && experts % e == 0) sizes.push_back(e);
    }
    return sizes;
  }
  // C as pinned, else 1 and, for samples of 16K tokens or more, powers of two that leave
  // each rank 8K tokens or more (ring attention's passes hide behind a block's core only on
  // long blocks; torchtitan's CP runs start at 32K).
  std::vector<int> context_sizes() const {
    if (options_.pins.context_parallel) return {*options_.pins.context_parallel};
    std::vector<int> sizes{1};
    const std::optional<int64_t> tokens = graph::sequence_length(graph_);
    if (!tokens) return sizes;
    constexpr int64_t kFewestTokensARank = 8192;
    for (int c = 2; c <= devices_ && *tokens / c >= kFewestTokensARank; c *= 2) {
      if (*tokens % (2 * c) == 0) sizes.push_back(c);
    }
    return sizes;
  }
  // (schedule, V) as pinned (interleaved alone: V = 2 and 4), else 1F1B and, with stages,
  // interleaved 1F1B at V = 2 and ZB-H1 (shape_fits_graph drops those the graph or the
  // micro-batches cannot take).
  std::vector<std::pair<plan::Schedule, int>> schedule_choices(int p) const {
    const auto& pins = options_.pins;
    if (pins.schedule && *pins.schedule == plan::Schedule::Interleaved) {
      if (pins.virtual_stages) return {{plan::Schedule::Interleaved, *pins.virtual_stages}};
      return {{plan::Schedule::Interleaved, 2}, {plan::Schedule::Interleaved, 4}};
    }
    if (pins.schedule || pins.virtual_stages) return {{pins.schedule.value_or(plan::Schedule::OneFOneB), pins.virtual_stages.value_or(1)}};
    if (p == 1) return {{plan::Schedule::OneFOneB, 1}};
    return {{plan::Schedule::OneFOneB, 1}, {plan::Schedule::Interleaved, 2}, {plan::Schedule::ZeroBubbleH1, 1}};
  }

  // Sequence parallelism as pinned, else on wherever there is a tensor group: it keeps a
  // t-th of the norms' activations and compute for the same bytes on the same links (two
  // half collectives for each all-reduce), so it is not searched against plain TP.
  std::vector<bool> sequence_choices(int t) const {
    if (options_.pins.sequence_parallel) return {*options_.pins.sequence_parallel};
    return {t > 1};
  }
  bool pinned_all() const { return options_.pins.tensor && options_.pins.pipeline && options_.pins.micro_batch; }
  bool shape_fits_graph(const ParallelShape& shape) const {
    try {
      check_shape(graph_, devices_, batch_, shape);
      return true;
    } catch (const UserError&) {
      return false;
    }
  }
  // No shape satisfies the pins: say why with the first pin that cannot be met alone.
  void check_pins_alone() const {
    ParallelShape shape;
    shape.tensor = options_.pins.tensor.value_or(1);
    shape.pipeline = options_.pins.pipeline.value_or(1);
    shape.micro_batch = options_.pins.micro_batch.value_or(1);
    shape.sequence_parallel = options_.pins.sequence_parallel.value_or(false);
    shape.schedule = options_.pins.schedule.value_or(plan::Schedule::OneFOneB);
    shape.virtual_stages = options_.pins.virtual_stages.value_or(1);
    shape.context = options_.pins.context_parallel.value_or(1);
    shape.experts = options_.pins.expert_parallel.value_or(1);
    shape.data = std::max(1, devices_ / std::max(1, shape.tensor * shape.pipeline * shape.context));
    if (shape.sequence_parallel && !options_.pins.tensor) shape.tensor = std::max(shape.tensor, 2);
    check_shape(graph_, devices_, batch_, shape);
    throw UserError(fmt::format("no 3-D shape satisfies the pins on {} devices at global batch {}", devices_, batch_));
  }

  // Every ZeRO stage and recomputation the pins allow, for one shape: those that fit join
  // `fitting`; the smallest requirement is remembered for the refusal.
  void add_fitting(const ParallelShape& shape, std::vector<ShapeCandidate>& fitting) {
    const plan::Plan plan = plan_shape(context_, batch_, shape);
    const program::RankSelection replica = program::select_ranks(plan, first_replica(plan, shape));
    for (const int zero : zero_stages(shape)) {
      for (const int shard : fsdp_shards(shape, zero)) {
        for (const Recompute recompute : recomputes()) {
          ++considered_;
          program::ProgramOptions program = options_.program;
          program.zero_stage = zero;
          program.fsdp_shard = shard;
          program.recompute = recompute;
          if (!fits(plan, replica, program, shape)) continue;
          fitting.push_back(ShapeCandidate{shape, program, estimate(plan, shape, program)});
        }
      }
    }
  }
  // Under ZeRO 3 unless pinned: full sharding (0), and HSDP with shard groups of the
  // data-parallel ranks one node holds where that is fewer than all of them (FSDP2's usual
  // hybrid: shard inside the node, replicate across nodes).
  std::vector<int> fsdp_shards(const ParallelShape& shape, int zero) const {
    if (zero != 3) return {0};
    if (options_.program.fsdp_shard > 0) return {options_.program.fsdp_shard};
    const int per_node = context_.network.cluster().devices_per_node();
    const int in_node = std::max(1, per_node / std::max(1, shape.tensor * shape.context));
    if (in_node >= 2 && in_node < shape.data && shape.data % in_node == 0) return {0, in_node};
    return {0};
  }
  std::vector<int> zero_stages(const ParallelShape& shape) const {
    if (options_.pins.zero_stage) return {*options_.pins.zero_stage};
    if (shape.data * shape.context == 1) return {0};  // (context ranks share the weights too)
    return {0, 1, 2, 3};
  }
  std::vector<Recompute> recomputes() const {
    if (options_.pins.recompute) return {*options_.pins.recompute};
    return {Recompute::None, Recompute::Selective, Recompute::Full};
  }

  // The ranks of the first data-parallel replica: those holding samples of [0, b) of a
  // micro-batch. plan_shape's replicas hold equal sample groups of the same layers, so their
  // memory is the same: the search counts one replica's.
  static std::vector<int> first_replica(const plan::Plan& plan, const ParallelShape& shape) {
    std::vector<char> in(static_cast<size_t>(plan.devices), 0);
    for (const plan::LayerPlacement& placement : plan.layers) {
      for (const cost::Shard& shard : placement.shards) {
        if (shard.samples.begin < shape.micro_batch) in[static_cast<size_t>(shard.rank)] = 1;
      }
    }
    std::vector<int> ranks;
    for (int rank = 0; rank < plan.devices; ++rank) {
      if (in[static_cast<size_t>(rank)]) ranks.push_back(rank);
    }
    return ranks;
  }

  bool fits(const plan::Plan& plan, const program::RankSelection& replica, const program::ProgramOptions& program,
            const ParallelShape& shape) {
    if (!options_.capacity) return true;
    const std::vector<program::DeviceMemory> memory =
        program::plan_memory_of_ranks(plan, graph_, options_.optimizer, program, replica);
    if (program::fits(memory, *options_.capacity)) return true;
    const program::DeviceMemory& peak = program::tightest_memory(memory, *options_.capacity);
    if (!smallest_ || peak.use.total() < smallest_->use.total()) {
      smallest_ = peak;
      smallest_what_ = fmt::format("{}, recompute {}, ZeRO {}", shape_text(shape), cost::recompute_name(program.recompute),
                                   program.zero_stage);
    }
    return false;
  }
  [[noreturn]] void throw_nothing_fits() const {
    BURST_ASSERT(smallest_.has_value(), "a search with candidates and none fitting found a smallest requirement");
    throw UserError(fmt::format("no plan fits in memory (optimizer {}, precision {}): the smallest requirement found "
                                "is {}'s: {} ({} candidates)",
                                cost::optimizer_name(options_.optimizer), cost::precision_name(options_.program.precision),
                                smallest_what_, program::memory_text(*smallest_, graph_, *options_.capacity),
                                considered_));
  }

  double estimate(const plan::Plan& plan, const ParallelShape& shape, const program::ProgramOptions& program) const {
    return estimate_3d(context_, plan, shape, program);
  }

  static constexpr int64_t kLargestMicroBatch = 64;
  const plan::PlanContext& context_;
  const graph::Graph& graph_;
  int64_t batch_;
  const ThreeDOptions& options_;
  int devices_;
  int stages_;  // the most the graph can be cut into
  int considered_ = 0;
  std::optional<program::DeviceMemory> smallest_;
  std::string smallest_what_;
};

}  // namespace

bool has_attention(const graph::Graph& graph) {
  return std::any_of(graph.layers().begin(), graph.layers().end(),
                     [](const graph::LayerSpec& layer) { return layer.op() == graph::OpKind::SelfAttention; });
}

ThreeDResult plan_3d(const plan::PlanContext& context, int64_t global_batch, const ThreeDOptions& options) {
  if (global_batch < 1) throw UserError(fmt::format("global batch must be at least 1, got {}", global_batch));
  if (options.pins.zero_stage && (*options.pins.zero_stage < 0 || *options.pins.zero_stage > program::kMaxZeroStage)) {
    throw UserError(fmt::format("the ZeRO stage must be 0, 1, 2 or 3, got {}", *options.pins.zero_stage));
  }
  return ThreeDSearch(context, global_batch, options).run();
}

}  // namespace burst::planner
