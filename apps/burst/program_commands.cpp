#include "program_commands.h"

#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/cluster/cluster.h"
#include "burst/graph/model_json.h"
#include "burst/plan/plan.h"
#include "burst/program/step_program.h"
#include "burst/util/error.h"
#include "command_inputs.h"
#include "model_option.h"

namespace burst::cli {
namespace {

struct ProgramArgs {
  std::string model;
  std::string plan_file;
  std::string devices;
  std::string global_batch;
  std::string rank = "all";
  ProgramOptionsText program;
  bool json = false;
};

plan::Plan read_plan(const ProgramArgs& args, const graph::Graph& graph) {
  if (!args.plan_file.empty()) {
    if (!args.devices.empty() || !args.global_batch.empty()) {
      throw UserError("burst program: give --plan FILE, or --devices and --global-batch (data parallel), not both");
    }
    plan::Plan plan = plan::load_plan_file(args.plan_file);
    plan::validate_plan(plan, graph, cluster::builtin_cluster("cpu", plan.devices));
    return plan;
  }
  if (args.devices.empty() || args.global_batch.empty()) {
    throw UserError("burst program: give --plan FILE, or --devices N and --global-batch B (data parallel)");
  }
  const int64_t devices = parse_whole(args.devices, "--devices", 1, 1 << 20);
  const int64_t batch = parse_whole(args.global_batch, "--global-batch", 1, int64_t{1} << 40);
  return plan::plan_data_parallel(graph, static_cast<int>(devices), batch);
}

nlohmann::json op_json(const program::StepProgram& program, const program::Op& op) {
  nlohmann::json out{{"kind", program::op_kind_name(op.kind)}};
  if (op.layer >= 0) out["layer"] = op.layer;
  if (op.segment >= 0) out["segment"] = op.segment;
  if (op.bucket >= 0) out["bucket"] = op.bucket;
  if (op.group >= 0) out["group"] = program.groups[static_cast<size_t>(op.group)];
  if (op.kind == program::OpKind::SyncBatchNorm) out["backward"] = op.backward;
  if (op.piece >= 0) {
    const program::Piece& piece = program.pieces[static_cast<size_t>(op.piece)];
    out["piece"] = {{"producer", piece.producer}, {"consumer", piece.consumer}, {"input", piece.input},
                    {"gradient", piece.gradient}, {"sender", piece.sender}, {"receiver", piece.receiver},
                    {"samples", {piece.samples.begin, piece.samples.end}}, {"bytes", piece.bytes},
                    {"local", piece.local()}};
    if (!piece.local()) out["piece"]["tag"] = piece.tag;
  }
  return out;
}

nlohmann::json program_json(const program::StepProgram& program, const std::vector<int>& ranks) {
  nlohmann::json out{{"format", "burst.program"}, {"version", 1}, {"ranks", program.ranks},
                     {"global_batch", program.global_batch}, {"segments", nlohmann::json::array()},
                     {"buckets", nlohmann::json::array()}, {"programs", nlohmann::json::object()}};
  for (const program::Segment& segment : program.segments) out["segments"].push_back({{"layers", segment.layers}});
  for (const program::Bucket& bucket : program.buckets) {
    out["buckets"].push_back({{"ranks", program.groups[static_cast<size_t>(bucket.group)]},
                              {"layers", bucket.layers},
                              {"bytes", bucket.bytes}});
  }
  for (const int rank : ranks) {
    nlohmann::json ops = nlohmann::json::array();
    for (const program::Op& op : program.ops[static_cast<size_t>(rank)]) ops.push_back(op_json(program, op));
    out["programs"][std::to_string(rank)] = ops;
  }
  return out;
}

void run_program(const ProgramArgs& args) {
  const graph::Graph graph = graph::load_model(args.model);
  const plan::Plan plan = read_plan(args, graph);
  const program::StepProgram program = program::build_step_program(graph, plan, parse_program_options(args.program));
  std::vector<int> ranks;
  if (args.rank == "all") {
    for (int rank = 0; rank < program.ranks; ++rank) ranks.push_back(rank);
  } else {
    ranks.push_back(static_cast<int>(parse_whole(args.rank, "--rank", 0, program.ranks - 1)));
  }
  if (args.json) {
    std::cout << program_json(program, ranks).dump(2) << '\n';
    return;
  }
  std::cout << fmt::format("{}: {} ranks, global batch {}, {} segments, {} buckets, {} messages\n", graph.name(),
                           program.ranks, program.global_batch, program.segments.size(), program.buckets.size(),
                           std::count_if(program.pieces.begin(), program.pieces.end(),
                                         [](const program::Piece& piece) { return !piece.local(); }));
  for (const int rank : ranks) std::cout << program::format_rank_program(program, graph, rank);
}

}  // namespace

void add_program_commands(CLI::App& app) {
  auto args = std::make_shared<ProgramArgs>();
  CLI::App* command = app.add_subcommand(
      "program", "Print the step program of a plan: what every rank does in one training step, in order");
  add_model_option(*command, args->model)->required();
  command->add_option("--plan", args->plan_file, "A plan file (burst plan -o FILE)");
  command->add_option("--devices", args->devices, "Without --plan: data parallelism on this many devices");
  command->add_option("--global-batch", args->global_batch, "Without --plan: the global batch");
  command->add_option("--rank", args->rank, "One rank, or all")->capture_default_str();
  add_program_options(*command, args->program);
  command->add_flag("--json", args->json, "Print JSON instead of action lists");
  command->callback([args] { run_program(*args); });
}

}  // namespace burst::cli
