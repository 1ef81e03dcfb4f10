#pragma once
// Plans: for every layer of a model, the ordered ranks it runs on and each rank's contiguous
// sample range of a micro-batch, and optionally a pipeline: the micro-batch count, the
// schedule and the stages, and per layer an optional tensor split (format "burst.plan",
// version 3, which reads versions 1 and 2 too; docs/plan-format.md).
//
// What a plan stores is only the placements. Everything else is derived, never stored:
// the activation transfers between connected layers (cost::reshard_transfers of the two
// placements) and each layer's gradient sync group (its ranks).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "burst/cluster/cluster.h"
#include "burst/cost/reshard.h"
#include "burst/cost/tensor_split.h"
#include "burst/graph/graph.h"
#include "burst/util/enum_names.h"

namespace burst::plan {

inline constexpr const char* kPlanFormat = "burst.plan";
inline constexpr int kPlanFormatVersion = 5;  // 4: "rank_kinds" (mixed clusters); 5: "rank_clocks_mhz"
inline constexpr int kOldestPlanFormatVersion = 1;

// One layer's placement: shards in rank order of execution (uneven splits are legal).
// With a tensor split of k parts (cost/tensor_split.h, docs/tensor-parallel.md) the shards
// come in sample groups of k consecutive shards with equal samples; a shard's part is its
// position in its group (shard index mod k), and the groups' ranges cover the batch once.
struct LayerPlacement {
  LayerPlacement() = default;
  LayerPlacement(std::string layer_name, std::vector<cost::Shard> layer_shards, cost::TensorSplit layer_split = {})
      : layer(std::move(layer_name)), shards(std::move(layer_shards)), split(layer_split) {}

  std::string layer;                // the layer's name, to match the plan to its model
  std::vector<cost::Shard> shards;  // non-empty ranges covering [0, global_batch) once per part
  cost::TensorSplit split;          // samples (k = 1) unless split beyond the batch

  int32_t part_of(size_t shard) const { return static_cast<int32_t>(shard % static_cast<size_t>(split.parts)); }
  size_t sample_groups() const { return shards.size() / static_cast<size_t>(split.parts); }
};

// The order a stage runs its micro-batches' forwards (F j) and backwards (B j) in
// (docs/pipelines.md): GPipe, every forward then every backward; 1F1B (PipeDream-Flush),
// p - 1 - s forwards of warm-up on stage s of p, then one forward and one backward in turn;
// interleaved 1F1B (Megatron-LM's, Narayanan et al. SC'21), each rank holding V model chunks
// (Pipeline::virtual_stages), 1F1B over chunk-micro-batches, which cuts the bubble by V;
// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): 1F1B with each backward
// split into B (input gradients) and W (weight gradients), stage s deferring its W passes
// by s so that every stage holds p micro-batches in flight, 1F1B's peak; the deferred W's fill
// the tail bubble, a third of 1F1B's when F, B and W take equal times.
enum class Schedule : uint8_t { GPipe, OneFOneB, Interleaved, ZeroBubbleH1 };
inline constexpr EnumNames<Schedule, 4> kScheduleNames{
    "pipeline schedule",
    {{{Schedule::GPipe, "gpipe"},
      {Schedule::OneFOneB, "1f1b"},
      {Schedule::Interleaved, "interleaved"},
      {Schedule::ZeroBubbleH1, "zb-h1"}}}};
const char* schedule_name(Schedule schedule);  // "gpipe", "1f1b", "interleaved", "zb-h1"
// UserError naming the known ones for any other name.
Schedule schedule_from_name(const std::string& name);

struct Plan;
// A plan's pipeline in words: "-" for none, else "4 stages (from layers a, b, c, d), 8
// micro-batches of 4, 1f1b".
std::string pipeline_text(const Plan& plan);

// How a step is cut into micro-batches and stages. The default: one micro-batch, one stage.
struct Pipeline {
  int64_t micro_batches = 1;  // the global batch is cut into this many equal micro-batches
  Schedule schedule = Schedule::GPipe;
  // The first layer of each stage after the first, ascending (stage 0 starts at layer 0);
  // empty: one stage. A stage runs its layers on its own ranks (the union of its layers').
  std::vector<graph::LayerId> stage_starts;
  // V, model chunks per rank (Schedule::Interleaved; 1 otherwise): the stages above are
  // p x V chunks, and chunk c runs on the ranks of physical stage c % p.
  int virtual_stages = 1;
};

struct Plan {
  std::string model;      // the model's name
  std::string strategy;   // "dp", "burst", "pipeline", "hand", ...
  int64_t global_batch = 0;
  int devices = 0;        // size of the cluster the plan was made for
  // A plan for a mixed cluster: the device kind of each of its ranks (devices entries), as
  // the file states them; empty for a cluster of one kind.
  std::vector<std::string> rank_kinds;
  // Each rank's SM clock, MHz (devices entries; docs/energy.md): what an energy objective
  // chose. Empty: every rank at its kind's maximum clock.
  std::vector<double> rank_clocks_mhz;
  // Placements of one micro-batch: every layer's shards cover [0, micro_batch()), and
  // micro-batch j's samples are those shifted by j x micro_batch().
  std::vector<LayerPlacement> layers;  // one per graph layer, in graph order
  Pipeline pipeline;
  // C, context parallelism (strategy "3d"): every sample's tokens are cut over C devices
  // for every layer (cost/tensor_split.h, TensorSplit::context). With C > 1 the layers'
  // shards name context groups, devices / C of them: group r stands for the C devices
  // context_device(r, k), k = 0..C-1, which hold the same samples and parts, each its 1/C
  // of the tokens (docs/step-program.md, "Context parallelism").
  int context_parallel = 1;
  // E, expert parallelism (strategy "3d"): every moe layer's experts spread over E
  // consecutive sample groups of its stage (an expert group), E / E_model of them a rank,
  // tokens dispatched to their experts' ranks and combined back by all-to-alls; expert
  // gradients reduced over the sample groups holding the same experts (docs/step-program.md,
  // "Expert parallelism"). Not with tensor-split moe layers or context parallelism.
  int expert_parallel = 1;

  int64_t micro_batch() const { return global_batch / pipeline.micro_batches; }
  int stage_count() const { return static_cast<int>(pipeline.stage_starts.size()) + 1; }
  // p: the stages ranks hold (stage_count() / virtual_stages); chunk c is on c % p.
  int physical_stages() const { return stage_count() / pipeline.virtual_stages; }
  // The stage of `layer` (0 without stages).
  int stage_of(graph::LayerId layer) const;
  // The ranks of stage `stage`: every rank of its layers, ascending.
  std::vector<int> stage_ranks(int stage) const;
  // t: the widest tensor split's parts (tensor groups are blocks of t consecutive ranks).
  int tensor_width() const;
  // The device of context rank k of context group `group`: the tensor group stays on
  // consecutive devices, its C context copies next to it ((group / t) x C x t + k x t +
  // group % t); `group` itself without context parallelism.
  int context_device(int group, int k) const;
  // Layer `id`'s split as a rank runs it: the placement's, with the plan's context (and, for
  // a moe layer, its expert parallelism).
  cost::TensorSplit layer_split(const graph::Graph& graph, graph::LayerId id) const;
};

// Stage s's micro-batch order under `schedule` with `stages` stages: (backward, j) pairs.
// GPipe peaks at m micro-batches in flight per stage, 1F1B at min(m, stages - s).
std::vector<std::pair<bool, int64_t>> stage_order(Schedule schedule, int stages, int stage, int64_t micro_batches);
// The most micro-batches stage `stage` holds activations for at once under that order.
int64_t in_flight_micro_batches(Schedule schedule, int stages, int stage, int64_t micro_batches);

// One forward or backward of one micro-batch of one chunk (a stage of Plan::stage_count()).
// Under ZB-H1 a backward step is B (input gradients) and a `weight` step W (weight gradients).
struct PipelineStep {
  int chunk = 0;
  bool backward = false;
  int64_t micro = 0;
  bool weight = false;
  bool operator==(const PipelineStep& other) const {
    return chunk == other.chunk && backward == other.backward && micro == other.micro && weight == other.weight;
  }
};
// What the ranks of physical stage `stage` run, in order: stage_order's for one chunk a rank
// (chunk = stage), or interleaved 1F1B over its V chunks stage, stage + p, ...: forward k
// (of m x V) is chunk (k / p) % V of micro-batch (k / pV) p + k % p, backward k the same with
// the chunks from the last; (p - s - 1) x 2 + (V - 1) x p warm-up forwards, then one forward
// and one backward in turn (m a multiple of p: validate_plan); under ZB-H1 1F1B's order with
// W j right after B (j + s), the last s W's at the end.
std::vector<PipelineStep> physical_stage_order(const Plan& plan, int stage);
// ZB-H1's order on stage `stage` of `stages` (physical_stage_order's, one chunk a rank).
std::vector<PipelineStep> zero_bubble_order(int stages, int stage, int64_t micro_batches);
// The micro-batches of chunk `chunk` whose activations its ranks hold when they hold the
// most chunk-micro-batches at once (in_flight_micro_batches for one chunk a rank).
int64_t chunk_in_flight(const Plan& plan, int chunk);

// What crosses the boundary before each layer c: the producers before c whose output a
// layer at or after c reads (a stage starting at c takes them from the stage before). At
// most two are named; a stage may start only where exactly one crosses.
struct BoundaryCrossing {
  int count = 0;
  graph::LayerId first = -1;   // the lowest crossing producer, -1 when none
  graph::LayerId second = -1;  // the next, -1 when fewer than two
};
std::vector<BoundaryCrossing> boundary_crossings(const graph::Graph& graph);  // by layer c

// Checks `plan` against its model and cluster; throws UserError with a one-line reason
// naming the layer: another model (name, layer count or layer names differ), a
// non-positive batch, ranks outside the cluster, a rank twice in one layer, samples of a
// micro-batch uncovered or covered twice; and its pipeline: micro-batches below 1 or not
// dividing the batch, stage starts out of order or out of range, a stage boundary that
// more than one layer's output crosses (inside a branch), ranks shared by two stages, and
// BatchNorm (statistics of the whole batch) under more than one micro-batch; and its
// tensor splits (validate_tensor_split). On a mixed cluster, a plan that states its ranks'
// kinds must state the cluster's. Clocks, where stated, must be one per rank, each in its
// kind's range, on kinds with a power model (cost/power.h).
void validate_plan(const Plan& plan, const graph::Graph& graph, const cluster::Cluster& cluster);

// The transfers that carry `producer`'s output to `consumer` (forward) — and, reversed,
// the consumer's input gradient back (backward). Every rank derives the same list. For
// layers without tensor splits only (has_tensor_split); block_transfers covers both.
std::vector<cost::Transfer> activation_transfers(const Plan& plan, graph::LayerId producer,
                                                 graph::LayerId consumer);

// Checks layer `id`'s tensor split against its op and shapes; throws UserError naming the
// layer: a kind its op cannot take (column and row: linear layers; heads: self_attention;
// features: element-wise ops, since the others need whole features; replicate: any but
// BatchNorm; none for tied weights), parts below 2 (or above 1 for samples), shards that
// do not come in groups of `parts` with equal samples, and a split that does not divide
// (output features, input features, heads or the last axis by parts).
void validate_tensor_split(const LayerPlacement& placement, const graph::Graph& graph, graph::LayerId id);

// Why layer `id` cannot take `split` (its op's rules and the units it must divide, as
// validate_tensor_split checks them), or "" when it can; the placement is not looked at.
std::string tensor_split_refusal(const graph::Graph& graph, graph::LayerId id, const cost::TensorSplit& split);

// Whether layer `id` holds tied weights: a linear tied to an embedding, or an embedding
// with tied heads.
bool has_tied_weights(const graph::Graph& graph, graph::LayerId id);

// Why layer `id`'s weight takes no tensor split whatever its op, or "" when it may: a weight
// tied to another layer's, or a linear weight held [in, out] (Hugging Face's Conv1D).
std::string weight_split_refusal(const graph::Graph& graph, graph::LayerId id);

// Whether any layer of the plan has a tensor split.
bool has_tensor_split(const Plan& plan);

// The blocks (samples x features of the last axis, cost::Block) of `layer`'s output that
// its shards hold after its forward, one per shard: a sliced output's part p holds slice p,
// every other shard all features (copies, for replicated and summed outputs).
std::vector<cost::Block> output_blocks(const Plan& plan, const graph::Graph& graph, graph::LayerId layer);
// The blocks of `consumer`'s input `input` its shards read: slice p for row and features
// splits, all features otherwise.
std::vector<cost::Block> input_blocks(const Plan& plan, const graph::Graph& graph, graph::LayerId consumer,
                                      size_t input);
// Forward: the pieces of `producer`'s output that `consumer`'s input `input` reads
// (block_transfers of the two). Backward: the pieces of that input's gradient that the
// producer's shards need, from the consumer's shards (block_transfers the other way: every
// copy of a replicated or summed output needs the whole gradient, which a column or heads
// split holds whole after its backward's all-reduce).
std::vector<cost::BlockTransfer> forward_blocks(const Plan& plan, const graph::Graph& graph, graph::LayerId producer,
                                                graph::LayerId consumer, size_t input);
std::vector<cost::BlockTransfer> backward_blocks(const Plan& plan, const graph::Graph& graph,
                                                 graph::LayerId producer, graph::LayerId consumer, size_t input);

// The ranks that hold `layer`'s weights, ascending: its own, and for an embedding those of
// every linear layer tied to it (LinearAttrs::tied_to, GPT-2's LM head), which keep a copy
// of the embedding's weight, updated from the same summed gradient.
std::vector<int> weight_holders(const Plan& plan, const graph::Graph& graph, graph::LayerId layer);

// The ranks that all-reduce `layer`'s weight gradients, ascending: weight_holders (empty when
// the layer has no parameters or they are held on one rank). A tied embedding's group spans
// its heads' ranks too, so each rank's contributions (embedding, head or both) are summed
// before the one update.
std::vector<int> sync_group(const Plan& plan, const graph::Graph& graph, graph::LayerId layer);

// Plan files. Reading checks the format; validate_plan checks the content.
std::string plan_to_json_text(const Plan& plan);
Plan plan_from_json_text(const std::string& text);
Plan load_plan_file(const std::string& path);

// A fingerprint of the plan's placements (devices, and every layer's shards in order): 16
// hex digits, equal for plans that place every sample of every layer on the same rank.
std::string placement_fingerprint(const Plan& plan);
void save_plan_file(const Plan& plan, const std::string& path);

// Data parallelism, what users run today: every layer on ranks 0..min(N, B)-1, the batch
// split as evenly as possible (the first B mod N ranks get one sample more).
Plan plan_data_parallel(const graph::Graph& graph, int devices, int64_t global_batch);

// The plan that puts every layer on rank 0 of `devices` with the whole batch (the
// one-device baseline).
Plan plan_single_device(const graph::Graph& graph, int devices, int64_t global_batch);

// The even split of [0, batch) over `ranks` (in order), as data parallelism uses it.
std::vector<cost::Shard> even_split(const std::vector<int>& ranks, int64_t batch);

}  // namespace burst::plan
