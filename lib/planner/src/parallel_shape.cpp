// 3-D parallel plans (parallel_shape.h).
#include "burst/planner/parallel_shape.h"

#include <fmt/format.h>

#include "burst/graph/language_model.h"

#include "burst/cost/tensor_split.h"
#include "burst/planner/pipeline_planner.h"
#include "burst/planner/tensor_planner.h"
#include "burst/util/error.h"
#include "stage_partition.h"

namespace burst::planner {

using cost::SplitKind;

std::string shape_text(const ParallelShape& shape) {
  const std::string chunks = shape.virtual_stages > 1 ? fmt::format(" (V {})", shape.virtual_stages) : std::string();
  const std::string context = shape.context > 1 ? fmt::format(" x CP {}", shape.context) : std::string();
  const std::string experts = shape.experts > 1 ? fmt::format(" (EP {})", shape.experts) : std::string();
  return fmt::format("TP {}{}{} x PP {}{} x DP {}{}, micro-batch {}, {}", shape.tensor,
                     shape.sequence_parallel ? " + SP" : "", context, shape.pipeline, chunks, shape.data, experts,
                     shape.micro_batch, plan::schedule_name(shape.schedule));
}

namespace {

// The first attention layer whose heads, or linear whose output features, `parts` does not
// divide (-1 when there is none).
graph::LayerId first_undivided(const graph::Graph& graph, int parts) {
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    const graph::OpKind op = graph.layer(id).op();
    if (op == graph::OpKind::SelfAttention && cost::divided_units(graph, id, SplitKind::Heads).count % parts != 0) {
      return id;
    }
  }
  return -1;
}

void check_sizes(const ParallelShape& shape) {
  if (shape.tensor < 1 || shape.pipeline < 1 || shape.data < 1 || shape.micro_batch < 1 || shape.context < 1 ||
      shape.experts < 1) {
    throw UserError(fmt::format("tensor-parallel, context-parallel, pipeline-stage, data-parallel and micro-batch "
                                "sizes must be at least 1, got {}",
                                shape_text(shape)));
  }
}

// Interleaving cuts the model into p x V chunks and runs micro-batches in rounds of p.
void check_virtual_stages(const ParallelShape& shape, int stages) {
  const bool interleaved = shape.schedule == plan::Schedule::Interleaved;
  if (shape.virtual_stages < 1 || (shape.virtual_stages > 1) != interleaved) {
    throw UserError(fmt::format("--virtual-stages {} goes with --schedule interleaved, which needs 2 or more (got "
                                "--schedule {})",
                                shape.virtual_stages, plan::schedule_name(shape.schedule)));
  }
  if (!interleaved) return;
  if (shape.pipeline < 2) throw UserError("--schedule interleaved needs --pipeline-stages 2 or more");
  if (static_cast<int64_t>(shape.pipeline) * shape.virtual_stages > stages) {
    throw UserError(fmt::format("--pipeline-stages {} x --virtual-stages {}: the model can be cut into at most {} "
                                "stages, not {}",
                                shape.pipeline, shape.virtual_stages, stages, shape.pipeline * shape.virtual_stages));
  }
}

// Sequence parallelism cuts each sample's tokens over the tensor group.
void check_sequence_split(const graph::Graph& graph, int tensor) {
  if (tensor < 2) {
    throw UserError("--sequence-parallel splits the tokens over a tensor group: it needs --tensor-parallel 2 or more");
  }
  const std::optional<int64_t> tokens = graph::sequence_length(graph);
  if (tokens && *tokens % tensor != 0) {
    throw UserError(fmt::format("--sequence-parallel with --tensor-parallel {} does not divide the {} tokens of a "
                                "sample (--seq)",
                                tensor, *tokens));
  }
}

// Context parallelism cuts each sample's tokens into 2C chunks, two a rank (causal balance).
void check_context_split(const graph::Graph& graph, int context) {
  const std::optional<int64_t> tokens = graph::sequence_length(graph);
  if (!tokens) {
    throw UserError(fmt::format("--context-parallel {} splits a language model's tokens; '{}' is not one", context,
                                graph.name()));
  }
  if (*tokens % (2 * context) != 0) {
    throw UserError(fmt::format("--context-parallel {} cuts each sample's {} tokens (--seq) into {} chunks, two a "
                                "rank, which do not divide them",
                                context, *tokens, 2 * context));
  }
}

// Expert parallelism spreads each moe layer's experts over E of the d sample groups.
void check_expert_split(const graph::Graph& graph, const ParallelShape& shape) {
  bool moe = false;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    if (graph.layer(id).op() != graph::OpKind::Moe) continue;
    moe = true;
    const int64_t experts = std::get<graph::MoeAttrs>(graph.layer(id).attrs).experts;
    if (experts % shape.experts != 0) {
      throw UserError(fmt::format("--expert-parallel {} does not divide the {} experts of '{}'", shape.experts, experts,
                                  graph.layer(id).name));
    }
  }
  if (!moe) throw UserError(fmt::format("--expert-parallel {}: '{}' has no moe layer", shape.experts, graph.name()));
  if (shape.tensor > 1 || shape.context > 1) {
    throw UserError(fmt::format("--expert-parallel {} with --tensor-parallel {} or --context-parallel {}: expert "
                                "parallelism beside tensor or context parallelism is not planned",
                                shape.experts, shape.tensor, shape.context));
  }
  if (shape.data % shape.experts != 0) {
    throw UserError(fmt::format("--expert-parallel {} does not divide the {} data-parallel groups", shape.experts,
                                shape.data));
  }
}

}  // namespace

void check_shape(const graph::Graph& graph, int devices, int64_t global_batch, const ParallelShape& shape) {
  check_sizes(shape);
  if (shape.tensor > 1) {
    const graph::LayerId undivided = first_undivided(graph, shape.tensor);
    if (undivided >= 0) {
      const cost::DividedUnits heads = cost::divided_units(graph, undivided, SplitKind::Heads);
      throw UserError(fmt::format("--tensor-parallel {} does not divide the {} {} of '{}'", shape.tensor,
                                  heads.count, heads.what, graph.layer(undivided).name));
    }
  }
  if (shape.sequence_parallel) check_sequence_split(graph, shape.tensor);
  if (shape.context > 1) check_context_split(graph, shape.context);
  if (shape.experts > 1) check_expert_split(graph, shape);
  const int stages = static_cast<int>(valid_stage_starts(graph).size()) + 1;
  if (shape.pipeline > stages) {
    throw UserError(fmt::format("--pipeline-stages {}: '{}' can be cut into at most {} stages", shape.pipeline,
                                graph.name(), stages));
  }
  check_virtual_stages(shape, stages);
  const int64_t used = static_cast<int64_t>(shape.tensor) * shape.context * shape.pipeline * shape.data;
  if (used != devices) {
    throw UserError(fmt::format("{} uses {} devices, but the cluster has {}", shape_text(shape), used, devices));
  }
  if (global_batch % shape.data != 0) {
    throw UserError(fmt::format("global batch {} does not split evenly over {} data-parallel groups", global_batch,
                                shape.data));
  }
  const int64_t share = global_batch / shape.data;
  if (share % shape.micro_batch != 0) {
    throw UserError(fmt::format("--micro-batch-size {} does not divide the batch share {} (global batch {} over {} "
                                "data-parallel groups)",
                                shape.micro_batch, share, global_batch, shape.data));
  }
  if (shape.schedule == plan::Schedule::Interleaved && shape.micro_batches(global_batch) % shape.pipeline != 0) {
    throw UserError(fmt::format("--schedule interleaved runs micro-batches in rounds of the {} stages, but {} "
                                "micro-batches of {} per data-parallel group are not",
                                shape.pipeline, shape.micro_batches(global_batch), shape.micro_batch));
  }
}

namespace {

class ShapePlanner {
 public:
  ShapePlanner(const plan::PlanContext& context, int64_t global_batch, const ParallelShape& shape)
      : context_(context), graph_(context.graph), batch_(global_batch), shape_(shape),
        kinds_(shape.tensor > 1 ? megatron_splits(graph_, shape.tensor, shape.sequence_parallel)
                                : std::vector<SplitKind>(graph_.size(), SplitKind::Samples)) {}

  plan::Plan build() {
    plan::Plan plan;
    plan.model = graph_.name();
    plan.strategy = "3d";
    plan.global_batch = batch_;
    plan.devices = context_.network.cluster().size();
    plan.context_parallel = shape_.context;  // the shards below name context groups
    plan.expert_parallel = shape_.experts;
    plan.pipeline.micro_batches = shape_.micro_batches(batch_);
    plan.pipeline.schedule = shape_.schedule;
    plan.pipeline.virtual_stages = shape_.virtual_stages;
    plan.pipeline.stage_starts = stage_starts();
    plan.layers.reserve(graph_.size());
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph_.size()); ++id) {
      plan.layers.push_back(placement(id, plan.stage_of(id) % shape_.pipeline));  // chunk c on stage c % p
    }
    return plan;
  }

 private:
  int stage_width() const { return shape_.data * shape_.tensor; }
  int64_t micro_batch() const { return static_cast<int64_t>(shape_.data) * shape_.micro_batch; }

  // Layer `id` on its stage: d sample groups of t parts under its split, or (samples: the
  // tied embedding and its heads, the loss) each group's samples split evenly over its parts.
  plan::LayerPlacement placement(graph::LayerId id, int stage) const {
    const int first = stage * stage_width();
    const SplitKind kind = kinds_[static_cast<size_t>(id)];
    if (kind == SplitKind::Samples) {
      // Each sample group's samples over its own parts, so replicas exchange nothing.
      std::vector<cost::Shard> shards;
      shards.reserve(static_cast<size_t>(stage_width()));
      for (int g = 0; g < shape_.data; ++g) {
        std::vector<int> ranks;
        for (int q = 0; q < std::min<int64_t>(shape_.tensor, shape_.micro_batch); ++q) {
          ranks.push_back(first + g * shape_.tensor + q);
        }
        for (cost::Shard shard : plan::even_split(ranks, shape_.micro_batch)) {
          shard.samples = cost::SampleRange{shard.samples.begin + g * shape_.micro_batch, shard.samples.end + g * shape_.micro_batch};
          shards.push_back(shard);
        }
      }
      return plan::LayerPlacement{graph_.layer(id).name, std::move(shards)};
    }
    std::vector<cost::Shard> shards;
    shards.reserve(static_cast<size_t>(stage_width()));
    for (int g = 0; g < shape_.data; ++g) {
      const cost::SampleRange samples{g * shape_.micro_batch, (g + 1) * shape_.micro_batch};
      for (int q = 0; q < shape_.tensor; ++q) shards.push_back(cost::Shard{first + g * shape_.tensor + q, samples});
    }
    return plan::LayerPlacement{graph_.layer(id).name, std::move(shards), cost::TensorSplit{kind, shape_.tensor}};
  }

  // Forward + backward of each layer at b samples under its split, balanced over p x V chunks.
  std::vector<graph::LayerId> stage_starts() const {
    const int chunks = shape_.pipeline * shape_.virtual_stages;
    if (chunks == 1) return {};
    std::vector<double> times;
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph_.size()); ++id) {
      const SplitKind kind = kinds_[static_cast<size_t>(id)];
      cost::TensorSplit split = kind == SplitKind::Samples ? cost::TensorSplit{} : cost::TensorSplit{kind, shape_.tensor};
      split.context = shape_.context;
      times.push_back(context_.cost.require_tensor(graph_, id, shape_.micro_batch, split).time.total().s());
    }
    const Partitions partitions(StageTimes(times), valid_stage_starts(graph_), static_cast<graph::LayerId>(graph_.size()),
                                chunks);
    return partitions.best(chunks).second;
  }

  const plan::PlanContext& context_;
  const graph::Graph& graph_;
  int64_t batch_;
  ParallelShape shape_;
  std::vector<SplitKind> kinds_;
};

}  // namespace

plan::Plan plan_shape(const plan::PlanContext& context, int64_t global_batch, const ParallelShape& shape) {
  check_shape(context.graph, context.network.cluster().size(), global_batch, shape);
  return ShapePlanner(context, global_batch, shape).build();
}

}  // namespace burst::planner
