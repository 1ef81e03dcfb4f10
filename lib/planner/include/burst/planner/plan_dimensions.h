#pragma once
// What a plan and its step do along every parallel dimension, for reports and the JSON
// plan: tensor (and sequence) parallelism, pipeline stages, data parallelism and its FSDP
// shard, the micro-batches and their schedule, recomputation, ZeRO and precision. Any
// strategy's plan has them: burst's own, where layers run on different device counts, is
// described by its widest layer.
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "burst/plan/plan.h"
#include "burst/program/program_options.h"

namespace burst::planner {

struct PlanDimensions {
  int tensor = 1;                  // the most parts of any layer's tensor split
  bool sequence_parallel = false;  // some layer takes a sequence split
  int context = 1;                 // devices sharing each sample's tokens (context parallelism)
  int experts = 1;                 // sample groups sharing each moe layer's experts (expert parallelism)
  int pipeline = 1;                // stages the ranks hold (physical)
  int virtual_stages = 1;          // model chunks each of them holds (interleaving)
  int data = 1;                    // the most sample groups of a layer split `tensor` ways
  int fsdp_shard = 0;              // HSDP's shard group (0: none, or full sharding)
  int64_t micro_batches = 1;
  int64_t micro_batch = 0;  // samples of one data-parallel group in one micro-batch
  plan::Schedule schedule = plan::Schedule::OneFOneB;
  cost::Recompute recompute = cost::Recompute::None;
  int zero_stage = 0;
  cost::Precision precision = cost::Precision::Fp32;
};

PlanDimensions plan_dimensions(const plan::Plan& plan, const program::ProgramOptions& program);

// "TP 8 + SP x CP 2 x PP 4 (V 2) x DP 32 (FSDP shard 8); 16 micro-batches of 2, interleaved;
// recompute selective, ZeRO 3, bf16".
std::string dimensions_text(const PlanDimensions& dimensions);

// {"tensor": 8, "sequence_parallel": true, "pipeline": 4, ...}: the fields above.
nlohmann::json dimensions_json(const PlanDimensions& dimensions);

}  // namespace burst::planner
