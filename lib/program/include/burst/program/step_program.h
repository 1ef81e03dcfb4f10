#pragma once
// The step program: what every rank does in one training step, in order, built once from
// (graph, plan) by a pure function. It is the only description of a step: the runtime
// interprets it, the evaluator (the planner's prediction) and the simulator time it
// (docs/step-program.md). No libtorch.
//
// A rank's program, for a plan without micro-batches:
//  forward, segment by segment in graph order, layer by layer inside a segment:
//    RECV_F / COPY_F  the pieces of each input whose producer is in another segment
//    F                the layer's forward on this rank's samples
//    SYNC_BN          a BatchNorm layer on several ranks with synchronised statistics: the
//                     blocking all-reduce its forward makes (2 x channels float64 sums)
//    TP_ALLREDUCE     a row or heads split (cost/tensor_split.h): the blocking all-reduce
//                     of its output over its tensor group (the k parts of a sample group);
//                     with sequence splits, TP_REDUCE_SCATTER and TP_ALL_GATHER over tokens
//                     in its place (tensor_collectives.h says which, around F and B)
//    SEND_F           the pieces of its output other ranks' consumers need (asynchronous)
//  backward, segment by segment in reverse graph order:
//    RECV_B / COPY_B  the gradients of every output of the segment that another segment
//                     consumed, before the segment's backward starts (one autograd call)
//    B                each layer's backward, in reverse graph order (SYNC_BN after a synced
//                     BatchNorm's; TP_ALLREDUCE of the input gradient after a column or heads
//                     split's); ALLREDUCE after the layer that closes a gradient bucket
//    SEND_B           the gradients of the segment's inputs for the producers' other ranks
//  then WAIT_ALLREDUCE for each of its buckets, CLIP_GRAD_NORM (with
//  ProgramOptions::clip_grad_norm: on every rank, the world sum of the squared norm), UPDATE
//  (the optimizer step of its layers),
//  REDUCE_LOSS (a world all-reduce of the loss sum, only in programs built with
//  BuildScope::reduce_loss) and WAIT_SENDS (the sends posted this step).
//
// With micro-batches and stages (plan::Pipeline, docs/pipelines.md), each rank runs its
// stage's forward and backward of every micro-batch (the ops above, restricted to the
// stage's segments, each op carrying its micro-batch) in its stage's order
// (plan::physical_stage_order: GPipe, 1F1B, interleaved 1F1B or ZB-H1, whose W steps run a
// segment's W ops in reverse graph order, ALLREDUCE after the closing layer's last W). Gradients accumulate over the micro-batches; a
// bucket's ALLREDUCE comes in the last micro-batch's backward, so it still overlaps the
// rest of that backward, and the step ends as above.
//
// Context parallelism (plan::Plan::context_parallel = C > 1): the program of the plan's
// context groups, each rank of it run by C devices (Plan::context_device) on their 1/C of
// every sample's tokens: pieces and tensor collectives carry 1/C of the bytes between the
// same context ranks of the groups, gradient buckets, ZeRO's gathers and reduce-scatters,
// clipping and the loss span every context rank (the gradients of a token share are
// partial sums), and each self_attention layer's F and B come with a CP_RING over the C
// devices of the group (docs/step-program.md, "Context parallelism").
// Segments: a maximal run of consecutive layers (graph order) with the same placement (the
// same shards; tensor splits of one segment share their parts) in which every layer reads
// its inputs from the segment as they are (a sliced output feeds sliced inputs, a whole one
// whole inputs). It runs as one piece of autograd: its layers pass tensors to each other
// directly (no messages, no detach), and its backward is one call.
// Tensor splits: pieces carry features (a slice of the producer's last axis), derived by
// plan::forward_blocks and plan::backward_blocks; a split segment's weight gradients are
// all-reduced among the ranks of the same part across its sample groups (one group per
// part), so a rank's buckets are its part's.
// Recomputation (ProgramOptions::recompute): under full, segments also end where a recompute
// unit ends (recompute_units.h), and a segment's backward starts with RECOMPUTE of each of
// its layers in forward order (its F ran without keeping what backward needs); under
// selective, a segment's backward starts with a RECOMPUTE of the core of each of its
// self_attention layers.
// ZeRO (ProgramOptions::zero_stage): stages 1 and 2 start REDUCE_SCATTER where ALLREDUCE
// would start, and end the step with an ALL_GATHER of each bucket after UPDATE; stage 3
// all-reduces as 1 and 2 do, and gathers each layer's weights (ALL_GATHER with the layer)
// before its F and its B instead of after UPDATE. Under HSDP (ProgramOptions::fsdp_shard)
// the gathers and reduce-scatters run over each rank's shard group, and a REDUCE_SCATTER
// names the replica group its shard is then all-reduced over (Op::replica_group).
// Buckets: walking layers in backward order, each layer with a sync group adds its fp32
// gradients to its group's open bucket; a bucket closes when it reaches
// ProgramOptions::bucket_bytes (a group's first bucket: first_bucket_bytes) or with the
// group's last layer, as DDP's bucket_cap_mb and its 1 MiB first bucket.
#include <cstdint>
#include <string>
#include <vector>

#include "burst/cost/reshard.h"
#include "burst/graph/graph.h"
#include "burst/plan/plan.h"
#include "burst/program/program_options.h"

namespace burst::program {

enum class OpKind : uint8_t {
  RecvActivation,   // a piece of a producer's output into a consumer's input (local: a copy)
  SendActivation,   // a piece of this rank's output to a consumer's rank (asynchronous)
  Forward,          // one layer's forward on this rank's samples
  SyncBatchNorm,    // the blocking statistics all-reduce of the preceding F or B (BatchNorm)
  TensorAllReduce,  // the blocking all-reduce over a tensor group of the preceding F's output
                    // (row, heads) or B's input gradient (column, heads)
  RecvGradient,     // a piece of an output's gradient from a consumer's rank (local: a copy)
  SendGradient,     // a piece of an input's gradient to the producer's rank (asynchronous)
  Backward,         // one layer's backward (a segment's B ops run as one autograd call)
  AllReduce,        // start a gradient bucket's all-reduce (asynchronous)
  WaitAllReduce,    // wait for a bucket's all-reduce
  Update,           // the optimizer step of this rank's layers
  ReduceLoss,       // world all-reduce of the loss sum (blocking)
  WaitSends,        // wait until every send posted this step is done
  Recompute,        // the layer's forward again before its backward (ProgramOptions::recompute):
                    // full, every layer of a recompute unit's segment; selective, an
                    // attention layer's core
  ReduceScatter,    // ZeRO 1 and 2: start a gradient bucket's reduce-scatter over its group
                    // (asynchronous; WAIT_ALLREDUCE waits for it): each rank keeps its shard
  AllGather,        // ZeRO 1 and 2: after UPDATE, a bucket's updated weight shards gathered
                    // (blocking); ZeRO 3: a layer's weights gathered before its F or B
  ClipGradNorm,     // ProgramOptions::clip_grad_norm: every rank's squared gradient norm
                    // summed over the world (blocking, 8 bytes), the gradients scaled; on
                    // every rank, after its gradient waits and before UPDATE
  TensorReduceScatter,  // sequence parallelism (tensor_collectives.h): the blocking
                        // reduce-scatter over tokens, over a tensor group, of a row or heads
                        // split's output (forward) or a sequence split's output gradient
                        // (backward)
  TensorAllGather,      // sequence parallelism: the blocking all-gather over tokens of a
                        // sequence split's output (forward) or of the output gradient a
                        // sequence split hands back to a whole layer (backward)
  ExpertDispatch,       // expert parallelism (plan::Plan::expert_parallel): a moe layer's
                        // all-to-all of its tokens to their experts over its expert group,
                        // right before its F (and of their gradients back, right after its B)
  ExpertCombine,        // the all-to-all of the experts' outputs back, right after its F (and
                        // of their gradients to the experts, right before its B)
  BackwardWeight,       // ZB-H1 (StepProgram::split_backward): one layer's weight gradients (W),
                        // after its B (which then computes the input gradients only)
  ContextRing,          // context parallelism (plan::Plan::context_parallel): ring attention's
                        // passes of keys and values around the context group, right before a
                        // self_attention layer's F (forward) or before its B and the tensor
                        // collectives before it (backward: keys, values and their gradients,
                        // and the forward's again where recomputation reruns the core)
};
const char* op_kind_name(OpKind kind);  // "F", "SEND_F", ...
// TP_ALLREDUCE, TP_REDUCE_SCATTER and TP_ALL_GATHER.
inline bool tensor_collective(OpKind kind) {
  return kind == OpKind::TensorAllReduce || kind == OpKind::TensorReduceScatter || kind == OpKind::TensorAllGather;
}

// A tag no message has: local pieces (copies) and ops that are not pieces.
inline constexpr uint32_t kNoTag = UINT32_MAX;
// Message tags are below this; runtime-internal messages (gathers, traces) use tags above.
inline constexpr uint32_t kTagLimit = uint32_t{1} << 29;

// One piece of a re-shard: samples of `producer`'s output (forward) or of its gradient
// (backward) that input position `input` of `consumer` uses.
struct Piece {
  graph::LayerId producer = 0;
  graph::LayerId consumer = 0;
  int32_t input = 0;         // position among consumer's inputs (a layer may read a producer twice)
  int32_t micro = 0;         // the micro-batch; `samples` are within it
  bool gradient = false;     // false: activation, consumer's rank <- producer's; true: the reverse
  int sender = 0;            // forward: the producer's rank; gradient: the consumer's
  int receiver = 0;
  cost::SampleRange samples;
  cost::FeatureRange features;  // of the producer's last axis: all of it but for tensor splits
  int64_t bytes = 0;         // samples x the producer's output bytes per sample x the share of features
  uint32_t tag = kNoTag;     // unique among messages; kNoTag for local pieces

  bool local() const { return sender == receiver; }
};

struct Segment {
  std::vector<graph::LayerId> layers;  // consecutive ids, ascending
  std::vector<cost::Shard> shards;     // the common placement
  int32_t parts = 1;                   // its tensor splits' parts (shards in groups of them)
};

struct Bucket {
  int32_t group = 0;                   // index into StepProgram::groups
  std::vector<graph::LayerId> layers;  // in backward order (ids descending)
  int64_t params = 0;                  // parameters (a tensor split's part's) of those layers
  int64_t bytes = 0;                   // their gradients at the step's precision (cost::value_bytes)
  graph::LayerId closed_by = 0;        // the layer whose backward completes it (layers.back())
};

struct Op {
  OpKind kind = OpKind::Forward;
  graph::LayerId layer = -1;  // F, B, SYNC_BN: the layer; messages: the consumer
  int32_t segment = -1;       // F, B: the layer's segment
  int32_t piece = -1;         // messages: index into StepProgram::pieces
  int32_t bucket = -1;        // ALLREDUCE, REDUCE_SCATTER, WAIT_ALLREDUCE, ALL_GATHER of a bucket
  int32_t group = -1;         // SYNC_BN, TP_*, ALLREDUCE, REDUCE_SCATTER, ALL_GATHER: index into StepProgram::groups
  bool backward = false;      // SYNC_BN, TP_*, ALL_GATHER of a layer: of the backward
  int32_t micro = 0;          // F, B, RECOMPUTE, SYNC_BN, TP_*, messages: the micro-batch
  // TP_ALLREDUCE, TP_REDUCE_SCATTER, TP_ALL_GATHER: the whole tensor (the group's samples x
  // tokens x features); ALL_GATHER: the whole weights gathered; CP_RING: the keys and values
  // one rank holds (one pass of the ring); EP_DISPATCH, EP_COMBINE: the rank's tokens' top-k copies
  // (samples x tokens x top_k x D); at the step's precision.
  int64_t bytes = 0;
  // REDUCE_SCATTER under HSDP (ProgramOptions::fsdp_shard): `group` is the rank's shard
  // group, and its shard is then all-reduced over this replica group; -1 otherwise.
  int32_t replica_group = -1;
};

// How much of a step's program to build (what the step does is ProgramOptions').
struct BuildScope {
  bool reduce_loss = true;     // end with a world all-reduce of the loss
  // Build the ops of one rank per class of ranks whose programs are the same but for their
  // samples and copies: ranks that exchange no messages and hold shards of the same sizes
  // in the same segments (so the same groups, buckets and update). The others' op lists
  // stay empty, and StepProgram::representative says which rank stands for them (the
  // lowest of the class). For timing (lib/timing's evaluator: data parallelism on 4096
  // ranks is one rank's ops); the runtime and check_step_program need every rank's ops.
  bool one_rank_per_class = false;
};

struct StepProgram {
  int ranks = 0;
  int64_t global_batch = 0;
  int64_t micro_batches = 1;  // the plan's (plan::Pipeline)
  int64_t micro_batch = 0;    // samples in one: global_batch / micro_batches
  std::vector<Segment> segments;
  std::vector<int32_t> segment_of;          // by layer
  std::vector<cost::TensorSplit> splits;    // by layer: the plan's
  std::vector<Piece> pieces;                // every piece, each once
  std::vector<Bucket> buckets;              // in closing order
  // Every group any rank all-reduces in (gradient buckets, BatchNorm statistics, tensor groups), ascending
  // ranks, distinct, sorted: the order every rank creates them in.
  std::vector<std::vector<int>> groups;
  std::vector<std::vector<Op>> ops;         // by rank
  // By rank: its SM clock, MHz (the plan's rank_clocks_mhz); empty: every rank at its
  // kind's maximum. The timer runs each rank's compute at its clock (docs/energy.md).
  std::vector<double> rank_clocks_mhz;
  // By rank: the rank whose ops stand for its own (itself, without
  // BuildScope::one_rank_per_class); -1 for a rank that holds no shard.
  std::vector<int32_t> representative;
  // ZB-H1 (plan::Schedule::ZeroBubbleH1): each B computes its layer's input gradients only,
  // and a W (BackwardWeight) of each layer with parameters its weight gradients, where the
  // schedule puts it (plan::zero_bubble_order); a bucket's reduction follows its layers' last W.
  bool split_backward = false;
  // Whether classes of ranks that exchange messages were merged because they mirror each
  // other (BuildScope::one_rank_per_class; the builder verifies it): the representatives'
  // messages and ports stand for their members'.
  bool mirrored = false;
};

// Builds the program of every rank. The plan must be valid for the graph (validate_plan);
// throws UserError for options out of range (bucket_bytes not a positive finite number)
// or more messages than tags (kTagLimit).
StepProgram build_step_program(const graph::Graph& graph, const plan::Plan& plan,
                               const ProgramOptions& options = {}, const BuildScope& scope = {});

// Checks what every rank relies on, throwing UserError naming the first violation: every
// (consumer, input, rank) range is assembled from pieces covering it exactly once; message
// tags are unique; every message is sent once and received once, by the ranks it names;
// every segment's ranks run F and B of each of its layers once; every bucket is started
// and waited for once by each rank of its group.
void check_step_program(const StepProgram& program, const graph::Graph& graph, const plan::Plan& plan);

// Gradients flow back into `producer` only when its output is a float activation that is
// not the data itself (no gradient messages into Input layers).
bool carries_gradient(const graph::Graph& graph, graph::LayerId producer);

// A rank's program, one op a line ("3  0F0  conv1 [0, 8)", "5  0SEND_F1  relu1 -> pool1
// [4, 8) to r1, tag 2, 3136 B"), in the style of torch.distributed.pipelining's action lists
// (segment, kind, micro-batch); samples are within the micro-batch.
std::string format_rank_program(const StepProgram& program, const graph::Graph& graph, int rank);

}  // namespace burst::program
