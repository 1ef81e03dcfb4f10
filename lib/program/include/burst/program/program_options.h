#pragma once
// What shapes a training step: the one set of options every consumer of a step program
// takes as it is. The program builder reads it; the evaluator, the simulator, the planners
// and the runtime embed it (EvaluateOptions::program, SimOptions::program,
// BurstOptions::program, ExecutorOptions::program, TrainConfig::program) and pass it on
// without translating it field by field. A new knob (precision, recomputation, sharding)
// is a field here, with its default here, and nowhere else. No libtorch.
#include <string>

#include "burst/cost/memory.h"
#include "burst/cost/precision.h"

namespace burst::program {

struct ProgramOptions {
  // Gradient buckets close at this many bytes, or with their group's last layer (DDP's
  // bucket_cap_mb: 25 MiB by default). A positive finite number.
  double bucket_bytes = 25.0 * 1024 * 1024;
  // A group's first bucket in backward order (DDP's _DEFAULT_FIRST_BUCKET_BYTES): small, so
  // the first all-reduce overlaps most of backward. Capped at bucket_bytes.
  double first_bucket_bytes = 1024.0 * 1024;
  // BatchNorm statistics all-reduced among a layer's ranks (burst's runtime: the one-device
  // result); false: each rank normalises with its own samples' statistics (DDP, DeepPool).
  bool sync_batchnorm = true;
  // The number format of the step (cost/precision.h). fp32 here; the commands default to
  // the device kind's (cost::default_precision). The cost model timing a program must be
  // made at the same precision (cost::make_cost_model).
  cost::Precision precision = cost::Precision::Fp32;
  // Activation recomputation (cost/memory.h): full cuts segments at recompute units
  // (recompute_units.h) and runs each unit's forward again before its backward.
  cost::Recompute recompute = cost::Recompute::None;
  // ZeRO stage over each layer's data-parallel group: 0 all-reduces gradients; 1 and 2
  // reduce-scatter them, update the rank's shard and all-gather the weights (2 also frees
  // the gradients outside the shard); 3 also gathers the weights before forward and backward.
  int zero_stage = 0;
  // HSDP (FSDP2's hybrid sharding): under ZeRO 3, each data-parallel group of d ranks is cut
  // into d / fsdp_shard groups of fsdp_shard consecutive ranks; weights, gradients and
  // optimizer state are sharded within a group and replicated across them. Gathers run
  // within the shard group; a bucket's reduction is a reduce-scatter within it followed by
  // an all-reduce of the shard over the ranks that hold the same shard in the other groups.
  // 0: shard over the whole data-parallel group (FSDP's full sharding).
  int fsdp_shard = 0;
  // Gradient clipping by the global norm (torch.nn.utils.clip_grad_norm_): > 0, before the
  // update every gradient is scaled by min(1, clip / (norm + 1e-6)), where norm is the L2
  // norm over every parameter of the model, however its layers are placed, split and
  // sharded; the step gains one world all-reduce of the squared norm (CLIP_GRAD_NORM).
  // 0: no clipping.
  double clip_grad_norm = 0;
  // Every device's power limit, watts (nvidia-smi -pl): each compute task runs at the highest
  // clock whose power is within it (cost/power.h). Between the device kind's idle power and
  // its board maximum; 0: none.
  double power_cap_w = 0;
  // Expert parallelism's token imbalance: the busiest expert rank's routed tokens over the
  // mean (--moe-imbalance; 1: balanced). Its moe layers' expert work is timed at this share.
  double moe_imbalance = 1.0;
};
inline constexpr int kMaxZeroStage = 3;

constexpr double kBytesPerMiB = 1024.0 * 1024;

// Throws UserError naming the field and its value when an option is out of range (a bucket
// size that is not a positive finite number, a ZeRO stage outside 0..3).
void check_program_options(const ProgramOptions& options);

// "sync" or "local": the command line's --batchnorm words, and reports'.
const char* batchnorm_mode_name(const ProgramOptions& options);
// Parses --batchnorm's word into options.sync_batchnorm; UserError for another word.
void set_batchnorm_mode(ProgramOptions& options, const std::string& mode);

}  // namespace burst::program
