#include "three_d_estimate.h"

#include <algorithm>
#include <vector>

#include "burst/cost/memory.h"
#include "burst/cost/tensor_split.h"
#include "burst/program/tensor_collectives.h"

namespace burst::planner {
namespace {

// Per stage, the time of one micro-batch's forward, backward and recomputation on the
// stage's first rank (every rank of a stage is alike), with its tensor-group collectives.
class StageEstimate {
 public:
  StageEstimate(const plan::PlanContext& context, const plan::Plan& plan, const ParallelShape& shape,
                const program::ProgramOptions& program)
      : context_(context), plan_(plan), shape_(shape), program_(program),
        scale_(cost::value_bytes(program.precision) / cost::kFloatBytes) {
    for (int q = 0; q < shape.tensor; ++q) tensor_group_.push_back(q);
    // plan_shape's split layers of one stage share its shards (its tensor groups).
    const program::SameTensorGroup same_stage = [&plan](graph::LayerId a, graph::LayerId b) {
      const auto split = [&plan](graph::LayerId id) { return plan.layers[static_cast<size_t>(id)].split.splits(); };
      return plan.stage_of(a) == plan.stage_of(b) && split(a) && split(b);
    };
    splits_.reserve(plan.layers.size());
    for (const plan::LayerPlacement& placement : plan.layers) splits_.push_back(placement.split);
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(plan.layers.size()); ++id) {
      collectives_.push_back(program::tensor_collectives(context.graph, splits_, same_stage, id));
    }
  }

  // One micro-batch of layer `id` on a rank of its stage: all of it, and (for ZB-H1's
  // estimate) its weight gradients' share.
  struct LayerSeconds {
    double total = 0;
    double weights = 0;
  };
  LayerSeconds layer(graph::LayerId id) const {
    const graph::Graph& graph = context_.graph;
    const plan::LayerPlacement& placement = plan_.layers[static_cast<size_t>(id)];
    const int64_t shard = placement.shards.front().samples.size();
    const cost::LayerTime time = context_.cost.require_tensor(graph, id, shard, plan_.layer_split(context_.graph, id)).time;
    const double weights = time.backward.s() * cost::weight_gradient_share(graph, id);
    return {layer_total(id, shard, time), weights};
  }

 private:
  double layer_total(graph::LayerId id, int64_t shard, const cost::LayerTime& time) const {
    const graph::Graph& graph = context_.graph;
    const plan::LayerPlacement& placement = plan_.layers[static_cast<size_t>(id)];
    double seconds = time.total().s() + recomputed(id, time.forward.s()) + ring(id, shard, time) +
                     experts(id, shard, time);
    if (!placement.split.splits()) return seconds;
    // (each context rank's tensor collectives move its 1/C of the tokens)
    const auto bytes = [&](graph::LayerId of) {
      return Bytes(static_cast<double>(shard * graph.info(of).output_bytes) * scale_ / plan_.context_parallel);
    };
    const program::TensorCollectives& tensor = collectives_[static_cast<size_t>(id)];
    if (tensor.after_forward) seconds += collective(*tensor.after_forward, bytes(id));
    if (tensor.before_backward) seconds += collective(*tensor.before_backward, bytes(id));
    if (tensor.after_backward) seconds += collective(*tensor.after_backward, bytes(tensor.input));
    return seconds;
  }

  // Expert parallelism, as the timer prices it (step_tasks.cpp): a dispatch and a combine
  // each way over the first E sample groups' ranks, and the busiest rank's imbalance.
  double experts(graph::LayerId id, int64_t shard, const cost::LayerTime& time) const {
    const int e = shape_.experts;
    if (e == 1 || context_.graph.layer(id).op() != graph::OpKind::Moe) return 0;
    const auto& moe = std::get<graph::MoeAttrs>(context_.graph.layer(id).attrs);
    const graph::Shape& out = context_.graph.info(id).output_shape;  // [T, D]
    const double bytes = static_cast<double>(shard * out.at(0) * moe.top_k * out.at(1)) * cost::kFloatBytes * scale_;
    std::vector<int> group;
    for (int g = 0; g < e; ++g) group.push_back(g);
    const double exchange = context_.network.all_to_all(group, Bytes(bytes)).s();
    const double busiest = (program_.moe_imbalance - 1) * cost::expert_compute_share(context_.graph, id);
    return 4 * exchange + busiest * (time.total().s() + recomputed(id, time.forward.s()));
  }

  // Ring attention's exposed passes, as the timer prices CP_RING (step_tasks.cpp).
  double ring(graph::LayerId id, int64_t shard, const cost::LayerTime& time) const {
    const int c = plan_.context_parallel;
    if (c == 1 || context_.graph.layer(id).op() != graph::OpKind::SelfAttention) return 0;
    const plan::LayerPlacement& placement = plan_.layers[static_cast<size_t>(id)];
    const double heads = placement.split.kind == cost::SplitKind::Heads ? placement.split.parts : 1;
    const double bytes = cost::keys_values_per_sample(context_.graph, id).value() * scale_ / heads / c *
                         static_cast<double>(shard);
    const double pass = context_.network.point_to_point(0, shape_.tensor, Bytes(bytes)).s();
    const double core = cost::attention_core_forward_share(context_.graph, id);
    const auto exposed = [&](double passes, double core_s) { return (c - 1) * std::max(0.0, passes * pass - core_s / c); };
    const double forward = exposed(1, time.forward.s() * core);
    const double reruns = program_.recompute != cost::Recompute::None ? forward : 0.0;
    return forward + exposed(2, time.backward.s() * core) + reruns;
  }

  double recomputed(graph::LayerId id, double forward) const {
    if (program_.recompute == cost::Recompute::Full) return forward;
    if (program_.recompute != cost::Recompute::Selective) return 0;
    return forward * cost::attention_core_forward_share(context_.graph, id);
  }

  // A tensor-group collective's time: a reduce-scatter or an all-gather is half an all-reduce.
  double collective(program::OpKind kind, Bytes bytes) const {
    return kind == program::OpKind::TensorAllReduce ? context_.network.allreduce(tensor_group_, bytes).s()
                                                    : context_.network.reduce_scatter(tensor_group_, bytes).s();
  }

  const plan::PlanContext& context_;
  const plan::Plan& plan_;
  const ParallelShape& shape_;
  const program::ProgramOptions& program_;
  double scale_;
  std::vector<int> tensor_group_;
  std::vector<cost::TensorSplit> splits_;                 // by layer: the plan's
  std::vector<program::TensorCollectives> collectives_;  // by layer
};

}  // namespace

double estimate_3d(const plan::PlanContext& context, const plan::Plan& plan, const ParallelShape& shape,
                   const program::ProgramOptions& program) {
  const graph::Graph& graph = context.graph;
  const StageEstimate stage_estimate(context, plan, shape, program);
  std::vector<double> stage(static_cast<size_t>(shape.pipeline), 0.0), params(stage.size(), 0.0),
      update(stage.size(), 0.0), weights(stage.size(), 0.0);
  double boundary = 0;
  const double scale = cost::value_bytes(program.precision) / cost::kFloatBytes;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    const auto s = static_cast<size_t>(plan.stage_of(id) % shape.pipeline);  // chunk c on physical stage c % p
    const auto seconds = stage_estimate.layer(id);
    stage[s] += seconds.total;
    weights[s] += seconds.weights;
    const plan::LayerPlacement& placement = plan.layers[static_cast<size_t>(id)];
    params[s] += static_cast<double>(cost::part_params(graph, id, placement.split)) * cost::value_bytes(program.precision);
    update[s] += context.cost.update_or_zero(graph, id).s() / (program.zero_stage >= 1 ? shape.data * shape.context : 1);
    if (id > 0 && plan.stage_of(id - 1) != plan.stage_of(id)) {
      const double bytes = static_cast<double>(shape.micro_batch * graph.info(id - 1).output_bytes) * scale / shape.context;
      const int next_stage = plan.context_device(shape.data * shape.tensor, 0);
      boundary = std::max(boundary, context.network.point_to_point(0, next_stage, Bytes(bytes)).s());
    }
  }
  const auto slowest = static_cast<size_t>(std::max_element(stage.begin(), stage.end()) - stage.begin());
  const double m = static_cast<double>(shape.micro_batches(plan.global_batch));
  // Interleaving's V chunks a rank cut the bubble to (p - 1) / V of a micro-batch's stage
  // time and cross p x V - 1 boundaries each way.
  const double v = shape.virtual_stages;
  // ZB-H1's bubble: (p - 1) x (F + B - W) of a micro-batch, the stage time less twice its W.
  const double bubble = shape.schedule == plan::Schedule::ZeroBubbleH1
                            ? (shape.pipeline - 1) * std::max(0.0, stage[slowest] - 2 * weights[slowest])
                            : (shape.pipeline - 1) / v * stage[slowest];
  double seconds = m * stage[slowest] + bubble + 2 * (shape.pipeline * v - 1) * boundary + update[slowest];
  if (shape.data * shape.context > 1) {
    // Every sample group's and every context rank's copy of part 0 (the gradients of a
    // token share are partial sums).
    std::vector<int> replicas;
    for (int g = 0; g < shape.data; ++g) {
      for (int k = 0; k < shape.context; ++k) replicas.push_back(plan.context_device(g * shape.tensor, k));
    }
    // HSDP: gathers and reduce-scatters within the first shard group, the shard all-reduced
    // across the groups (program_options.h, fsdp_shard).
    // (a shard group's sample groups with their context ranks)
    const int shard = program.fsdp_shard > 0 && program.fsdp_shard < shape.data ? program.fsdp_shard : shape.data;
    const std::vector<int> gathered(replicas.begin(), replicas.begin() + shard * shape.context);
    std::vector<int> across;
    for (size_t g = 0; g < replicas.size(); g += static_cast<size_t>(shard * shape.context)) across.push_back(replicas[g]);
    const Bytes stage_bytes(params[slowest]);
    // All-reduce, or reduce-scatter + all-gather (the same time): not overlapped here.
    seconds += shard == shape.data ? context.network.allreduce(replicas, stage_bytes).s()
                                   : context.network.reduce_scatter(gathered, stage_bytes).s() +
                                         context.network.allreduce(across, Bytes(params[slowest] / static_cast<double>(gathered.size()))).s();
    // ZeRO 3 gathers the stage's weights before each micro-batch's forward and backward.
    if (program.zero_stage == 3) seconds += 2 * m * context.network.all_gather(gathered, stage_bytes).s();
  }
  return seconds;
}

}  // namespace burst::planner
