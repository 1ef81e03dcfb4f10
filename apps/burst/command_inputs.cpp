#include "command_inputs.h"
#include "enum_option.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>

#include "burst/cost/power.h"
#include "burst/graph/model_json.h"
#include "burst/planner/heterogeneous.h"
#include "burst/util/error.h"
#include "burst/util/format.h"
#include "burst/util/json_io.h"
#include "plan_report.h"

namespace burst::cli {

// A whole number in [minimum, maximum] given to `flag`; anything else is refused quoting it.
int64_t parse_whole(const std::string& text, const char* flag, int64_t minimum, int64_t maximum) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error == std::errc::invalid_argument || stop != end) {
    throw UserError(fmt::format("{} must be a whole number, got '{}'", flag, text_excerpt(text)));
  }
  if (error != std::errc::result_out_of_range && value < minimum) {
    throw UserError(fmt::format("{} must be at least {}, got {}", flag, minimum, text_excerpt(text)));
  }
  if (error == std::errc::result_out_of_range || value > maximum) {
    throw UserError(
        fmt::format("{} must be between {} and {}, got {}", flag, minimum, maximum, text_excerpt(text)));
  }
  return value;
}


double parse_finite(const std::string& text, const char* flag, double minimum, const char* expected) {
  const std::string problem = fmt::format("{} must be {}, got '{}'", flag, expected, text_excerpt(text));
  // strtod alone would accept leading spaces, "nan", "infinity" and hex floats.
  if (text.empty() || text.find_first_not_of("0123456789.eE+-") != std::string::npos) {
    throw UserError(problem);
  }
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(value) || value < minimum) throw UserError(problem);
  return value;
}

std::optional<double> parse_amplification(const std::string& text) {
  if (text == "inf") return std::nullopt;
  return parse_finite(text, "--amplification", 1, "a number >= 1 or 'inf'");
}

// An amplification limit as the report states it (nullopt: none).
std::optional<double> limit_of(double amplification) {
  return std::isinf(amplification) ? std::nullopt : std::optional<double>(amplification);
}


planner::BurstOptions burst_options(const std::optional<double>& limit, bool strict) {
  planner::BurstOptions options;
  options.amplification = limit ? *limit : std::numeric_limits<double>::infinity();
  options.never_slower_than_dp = !strict;
  return options;
}


namespace {

// A --profile entry: KIND=FILE where KIND is a device kind's name, else FILE.
std::pair<std::string, std::string> split_profile(const std::string& entry) {
  const size_t equals = entry.find('=');
  if (equals == std::string::npos || equals == 0) return {"", entry};
  const std::string kind = entry.substr(0, equals);
  const bool kind_like = std::all_of(kind.begin(), kind.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  });
  return kind_like ? std::make_pair(kind, entry.substr(equals + 1)) : std::make_pair(std::string(), entry);
}

// Every KIND=FILE names a kind of the cluster, at most one profile per kind, and a bare FILE
// only on a cluster of one kind.
void check_profiles(const InputOptions& options, const cluster::Cluster& cluster) {
  std::vector<std::string> seen;
  for (const std::string& entry : options.profiles) {
    auto [kind, file] = split_profile(entry);
    if (file.empty()) throw UserError(fmt::format("--profile '{}' names no file", entry));
    if (kind.empty()) {
      if (cluster.mixed()) {
        throw UserError(fmt::format("--profile '{}': on a cluster of several kinds ({}) give each profile as KIND=FILE",
                                    entry, fmt::join(cluster.kinds(), ", ")));
      }
      kind = cluster.device();
    } else if (std::find(cluster.kinds().begin(), cluster.kinds().end(), kind) == cluster.kinds().end()) {
      throw UserError(fmt::format("--profile '{}' is for kind '{}', which the cluster does not have (its kinds: {})",
                                  entry, kind, fmt::join(cluster.kinds(), ", ")));
    }
    if (std::find(seen.begin(), seen.end(), kind) != seen.end()) {
      throw UserError(fmt::format("--profile gives kind '{}' two profiles", kind));
    }
    seen.push_back(kind);
  }
}

}  // namespace

std::optional<std::string> profile_path(const InputOptions& options, const std::string& kind) {
  std::optional<std::string> found;
  for (const std::string& entry : options.profiles) {
    const auto [entry_kind, file] = split_profile(entry);
    if (!entry_kind.empty() && !kind.empty() && entry_kind != kind) continue;
    if (found) throw UserError(fmt::format("--profile is given twice for {}", kind.empty() ? "one device kind" : kind));
    found = file;
  }
  return found;
}

CLI::Option* add_profile_option(CLI::App& command, std::vector<std::string>& profiles) {
  return command.add_option("--profile", profiles,
                            "Measured profile for the cost model (burst profile -o FILE): FILE, or KIND=FILE for one "
                            "kind of a mixed cluster (repeatable)")
      ->take_all()
      ->allow_extra_args(false)
      ->check([](const std::string& text) { return text.empty() ? std::string("--profile needs a value, got ''") : std::string(); });
}

// The cluster of the command line: --cluster FILE, or the built-in one of `kind` with
// --devices (or, with --plan and no --devices, the plan's device count).
namespace {

// Whether --devices lists kinds (a100:8,v100:8) rather than counting devices.
bool lists_kinds(const InputOptions& options) {
  return !options.devices.empty() && options.devices.find_first_not_of("0123456789") != std::string::npos;
}

cluster::Cluster make_cluster(const InputOptions& options, const std::string& kind,
                              const std::optional<plan::Plan>& loaded) {
  if (lists_kinds(options)) {  // --devices a100:8,v100:8
    if (!options.cluster_file.empty()) {
      throw UserError(fmt::format("--devices '{}' builds a mixed cluster: give it or --cluster FILE, not both",
                                  options.devices));
    }
    if (!options.device.empty()) {
      throw UserError(fmt::format("--devices '{}' names its device kinds: it takes no --device", options.devices));
    }
    return cluster::builtin_mixed_cluster(options.devices, kind);
  }
  std::optional<int64_t> devices;
  if (!options.devices.empty()) {
    devices = parse_whole(options.devices, "--devices", 1, cluster::kMaxDevices);
  }
  if (!options.cluster_file.empty()) {
    cluster::Cluster cluster = cluster::load_cluster_file(options.cluster_file);
    if (devices && *devices != cluster.size()) {
      throw UserError(fmt::format("--devices {} disagrees with cluster file '{}', which has {} devices",
                                  *devices, options.cluster_file, cluster.size()));
    }
    return cluster;
  }
  if (!devices && loaded) devices = loaded->devices;
  if (!devices) throw UserError(fmt::format("{} needs --devices N (or --cluster FILE)", options.command));
  return cluster::builtin_cluster(kind, *devices);
}

// Every kind's device model, the fastest first as the reference (Inputs).
void resolve_kinds(const InputOptions& options, const graph::Graph& graph, int64_t global_batch, Inputs& inputs) {
  const cluster::Cluster& cluster = inputs.cluster;
  for (const std::string& kind : cluster.kinds()) inputs.kind_devices.push_back(cost::resolve_device(kind, profile_path(options, kind)));
  std::vector<std::unique_ptr<cost::CostModel>> models;
  std::vector<const cost::CostModel*> pointers;
  for (const cost::DeviceModel& device : inputs.kind_devices) {
    // Ranked at FP32 (the step's precision is parsed after): the order of the catalog kinds is the same at TF32.
    models.push_back(cost::make_cost_model(device, cost::Precision::Fp32));
    pointers.push_back(models.back().get());
  }
  const cost::NetworkModel network(cluster);
  const plan::PlanContext context{graph, *pointers.front(), network, pointers};
  inputs.reference_kind =
      planner::kinds_fastest_first(context, std::max<int64_t>(1, global_batch / cluster.size())).front();
  inputs.device = inputs.kind_devices[static_cast<size_t>(inputs.reference_kind)];
}

// Each rank's memory: its group's, else its kind's catalog capacity; --device-memory for all.
program::MemoryCapacity mixed_capacity(const Inputs& inputs) {
  const cluster::Cluster& cluster = inputs.cluster;
  program::MemoryCapacity capacity;
  for (int rank = 0; rank < cluster.size(); ++rank) {
    const cluster::DeviceGroup& group = cluster.groups()[static_cast<size_t>(cluster.group_of(rank))];
    const Bytes bytes = group.memory ? *group.memory : inputs.kind_devices[static_cast<size_t>(cluster.kind_index(rank))].spec.memory;
    capacity.rank_capacity.push_back(bytes);
    capacity.rank_device.push_back(group.device);
    if (capacity.capacity < bytes) {
      capacity.capacity = bytes;
      capacity.device = group.device;
    }
  }
  return capacity;
}

// A layer whose own weights, gradients and optimizer state fit no device of the cluster
// (whatever the plan, short of tensor splits or ZeRO): one line naming it and the kinds.
void check_layers_fit_some_kind(const Inputs& inputs) {
  if (!inputs.cluster.mixed()) return;
  const program::LayerStateBound largest = program::largest_unsplit_layer_state(
      inputs.graph, inputs.optimizer, inputs.program, inputs.cluster.size());
  if (!(inputs.capacity.capacity < largest.bytes)) return;
  std::vector<std::string> kinds;
  for (size_t kind = 0; kind < inputs.cluster.kinds().size(); ++kind) {
    kinds.push_back(fmt::format("{} {}", inputs.cluster.kinds()[kind], bytes_decimal(inputs.kind_devices[kind].spec.memory.value())));
  }
  throw UserError(fmt::format("layer '{}' needs at least {} for its weights, gradients and optimizer state, more than "
                              "a device of any kind of the cluster holds ({})",
                              inputs.graph.layer(largest.layer).name, bytes_decimal(largest.bytes.value()),
                              fmt::join(kinds, ", ")));
}

}  // namespace

namespace {

planner::ShapePins parse_pins(const InputOptions& options, const program::ProgramOptions& program) {
  planner::ShapePins pins;
  constexpr int64_t kMostDevices = 1 << 20;
  if (!options.tensor_parallel.empty()) {
    pins.tensor = static_cast<int>(parse_whole(options.tensor_parallel, "--tensor-parallel", 1, kMostDevices));
  }
  if (!options.pipeline_stages.empty()) {
    pins.pipeline = static_cast<int>(parse_whole(options.pipeline_stages, "--pipeline-stages", 1, kMostDevices));
  }
  if (!options.micro_batch_size.empty()) {
    pins.micro_batch = parse_whole(options.micro_batch_size, "--micro-batch-size", 1, std::numeric_limits<int64_t>::max());
  }
  if (!options.schedule.empty()) pins.schedule = plan::schedule_from_name(options.schedule);
  pins.sequence_parallel = options.sequence_parallel;
  if (!options.virtual_stages.empty()) {
    pins.virtual_stages = static_cast<int>(parse_whole(options.virtual_stages, "--virtual-stages", 1, kMostDevices));
    if (!pins.schedule && *pins.virtual_stages > 1) pins.schedule = plan::Schedule::Interleaved;
  }
  if (!options.expert_parallel.empty()) {
    pins.expert_parallel = static_cast<int>(parse_whole(options.expert_parallel, "--expert-parallel", 1, kMostDevices));
  }
  if (!options.context_parallel.empty()) {
    pins.context_parallel = static_cast<int>(parse_whole(options.context_parallel, "--context-parallel", 1, kMostDevices));
  }
  if (!options.program.recompute.empty() && options.program.recompute != "auto") pins.recompute = program.recompute;
  if (!options.program.zero.empty() && options.program.zero != "auto") pins.zero_stage = program.zero_stage;
  if (program.fsdp_shard > 0) pins.zero_stage = 3;  // --fsdp-shard shards as ZeRO 3 does
  return pins;
}

// The global batch: --global-batch (`asked`), checked against the plan file's when both are
// given; the plan file's when only it is.
int64_t global_batch_of(const InputOptions& options, const std::optional<int64_t>& asked,
                        const std::optional<plan::Plan>& loaded) {
  if (!loaded) return *asked;
  if (asked && *asked != loaded->global_batch) {
    throw UserError(fmt::format("plan file '{}' is for global batch {}, not --global-batch {}", options.plan_file,
                                loaded->global_batch, *asked));
  }
  return loaded->global_batch;
}

// The device models and the memory per device: every kind's on a mixed cluster, else the one
// kind's (`device` when it was already resolved from a profile).
void resolve_devices(const InputOptions& options, std::optional<cost::DeviceModel> device, Inputs& inputs) {
  if (inputs.cluster.mixed()) {
    resolve_kinds(options, inputs.graph, inputs.global_batch, inputs);
    inputs.capacity = mixed_capacity(inputs);
  } else {
    inputs.device = device ? std::move(*device) : cost::resolve_device(inputs.cluster.device(), profile_path(options));
    inputs.capacity = program::MemoryCapacity{inputs.cluster.device(), inputs.device.spec.memory};
    // A cluster file's memory_gib stands for the catalog's capacity (the smallest group's).
    const Bytes catalog = inputs.device.spec.memory;
    inputs.capacity.capacity = inputs.cluster.groups().front().memory.value_or(catalog);
    for (const cluster::DeviceGroup& group : inputs.cluster.groups()) {
      inputs.capacity.capacity = std::min(inputs.capacity.capacity, group.memory.value_or(catalog));
    }
  }
  if (!options.device_memory.empty()) {
    inputs.capacity = program::MemoryCapacity{
        inputs.capacity.device,
        Bytes(parse_finite(options.device_memory, "--device-memory", 1e-9, "a size in GB > 0") * 1e9)};
  }
}

// The step's options. A mixed cluster's step runs at the reference kind's default precision,
// each other kind at cost::kind_precision of it.
void resolve_program(const InputOptions& options, Inputs& inputs) {
  inputs.program = parse_program_options(options.program, cost::default_precision(inputs.device.spec));
  if (inputs.program.power_cap_w == 0) inputs.program.power_cap_w = cluster::stated_power_cap(inputs.cluster).value_or(0);
  check_power_cap(inputs.cluster, inputs.program.power_cap_w);
  cost::at_precision(inputs.device.spec, inputs.program.precision);  // refuses a precision the device lacks
  for (const cost::DeviceModel& kind_device : inputs.kind_devices) {
    cost::at_precision(kind_device.spec, cost::kind_precision(kind_device.spec, inputs.program.precision));
  }
  inputs.pins = parse_pins(options, inputs.program);
}

}  // namespace

// Cheap checks first, the device (fitting its curves takes a while) last.
Inputs read_inputs(const InputOptions& options) {
  if (options.global_batch.empty() && options.plan_file.empty()) {
    throw UserError(fmt::format("{} needs --global-batch B (the samples of one iteration)", options.command));
  }
  std::optional<int64_t> asked;  // a bad number is refused before any file is read
  if (!options.global_batch.empty()) {
    asked = parse_whole(options.global_batch, "--global-batch", 1, std::numeric_limits<int64_t>::max());
  }
  graph::Graph graph = graph::load_model(options.model);
  std::optional<plan::Plan> loaded;
  if (!options.plan_file.empty()) loaded = plan::load_plan_file(options.plan_file);
  const int64_t global_batch = global_batch_of(options, asked, loaded);
  // The device kind: the cluster file's, --device's, or (--profile alone) the profile's.
  std::optional<cost::DeviceModel> device;
  std::string kind = options.device;
  if (options.cluster_file.empty() && kind.empty() && !lists_kinds(options)) {
    device = cost::resolve_device("", profile_path(options));
    kind = device->spec.kind;
  }
  cluster::Cluster cluster = make_cluster(options, kind, loaded);
  if (loaded) {
    try {
      plan::validate_plan(*loaded, graph, cluster);
    } catch (const UserError& error) {
      throw UserError(fmt::format("plan file '{}': {}", options.plan_file, error.what()));
    }
  }
  check_profiles(options, cluster);
  Inputs inputs(std::move(graph), std::move(loaded), std::move(cluster));
  inputs.global_batch = global_batch;
  inputs.optimizer = cost::parse_optimizer(options.optimizer);
  resolve_devices(options, std::move(device), inputs);
  resolve_program(options, inputs);
  check_layers_fit_some_kind(inputs);
  return inputs;
}

void check_power_cap(const cluster::Cluster& cluster, double cap_w) {
  if (cap_w == 0) return;
  for (const std::string& kind : cluster.kinds()) {
    const auto power = cost::catalog_power(kind);
    if (!power) throw UserError(fmt::format("--power-cap {} W: device kind '{}' has no power model", cap_w, kind));
    cost::check_power_cap(*power, cap_w);
  }
}

CostModels make_cost_models(const Inputs& inputs, cost::Precision precision) {
  CostModels models;
  if (inputs.kind_devices.empty()) {
    models.models.push_back(cost::make_cost_model(inputs.device, precision));
    return models;
  }
  for (const cost::DeviceModel& device : inputs.kind_devices) {
    models.models.push_back(cost::make_cost_model(device, cost::kind_precision(device.spec, precision)));
  }
  models.reference = inputs.reference_kind;
  return models;
}

std::vector<double> memory_of_kind(const Inputs& inputs) {
  std::vector<double> memory;
  for (const cost::DeviceModel& device : inputs.kind_devices) memory.push_back(device.spec.memory.value());
  return memory;
}

plan::PlanContext CostModels::context(const graph::Graph& graph, const cost::NetworkModel& network) const {
  std::vector<const cost::CostModel*> kinds;
  if (models.size() > 1) {
    for (const auto& model : models) kinds.push_back(model.get());
  }
  return plan::PlanContext{graph, reference_model(), network, std::move(kinds), plan::catalog_kind_power(network.cluster())};
}

std::string ProgramOptionsText::default_bucket_mib() {
  return fmt::format("{:g}", program::ProgramOptions{}.bucket_bytes / program::kBytesPerMiB);
}

void add_program_options(CLI::App& command, ProgramOptionsText& options) {
  command.add_option("--batchnorm", options.batchnorm,
                     "The BatchNorm the step runs: sync (statistics over all the layer's ranks: the one-device "
                     "result, burst's runtime) or local (each rank's own samples, as DDP and DeepPool)")
      ->check(CLI::IsMember({"sync", "local"}))
      ->capture_default_str();
  command.add_option("--bucket-mb", options.bucket_mb,
                     "Gradient bucket cap in MiB: a bucket's all-reduce starts when it holds this much (as DDP's "
                     "bucket_cap_mb) or its group's last layer is done")
      ->capture_default_str();
  command.add_option("--precision", options.precision,
                     "Number format of the step: fp32, tf32, bf16, fp16 (mixed precision: 2-byte weights, "
                     "activations and gradients, fp32 master weights and optimizer state) or fp8 (H100/H200 "
                     "GEMMs); default: tf32 on a100/h100/h200, fp32 on v100 and cpu");
  command.add_option("--recompute", options.recompute,
                     "Activation recomputation: none, selective (attention cores, as Megatron-LM) or full (each "
                     "recompute unit's forward again before its backward); auto or not given: none, or chosen by "
                     "--strategy 3d");
  command.add_option("--zero", options.zero,
                     "ZeRO stage over each layer's data-parallel group: 0 (all-reduce), 1 (optimizer state "
                     "sharded), 2 (and gradients), 3 (and weights); auto or not given: 0, or chosen by --strategy 3d");
  command.add_option("--clip-grad-norm", options.clip_grad_norm,
                     "Clip gradients to this global L2 norm before the update (torch.nn.utils.clip_grad_norm_), the "
                     "norm taken over every parameter across ranks, parts and shards; 0: no clipping. The step gains "
                     "one world all-reduce")
      ->capture_default_str();
  command.add_option("--fsdp-shard", options.fsdp_shard,
                     "HSDP: shard weights, gradients and optimizer state within groups of N data-parallel ranks "
                     "and replicate across them (FSDP2's hybrid sharding; implies --zero 3); 0: shard over all")
      ->capture_default_str();
  command.add_option("--moe-imbalance", options.moe_imbalance,
                     "Expert parallelism's token imbalance: the busiest expert rank's routed tokens over the mean "
                     "(1: balanced); its moe layers' expert work is timed at that share")
      ->capture_default_str();
  command.add_option("--power-cap", options.power_cap,
                     "Every device's power limit in watts (as nvidia-smi -pl): compute runs at the highest clock "
                     "whose power is within it; between the device's idle power and its board maximum; 0: none")
      ->capture_default_str();
}

program::ProgramOptions parse_program_options(const ProgramOptionsText& options, cost::Precision precision) {
  program::ProgramOptions program;
  program::set_batchnorm_mode(program, options.batchnorm);
  const double mib = parse_finite(options.bucket_mb, "--bucket-mb", 0, "a positive number of MiB");
  if (!(mib > 0)) throw UserError(fmt::format("--bucket-mb must be a positive number of MiB, got '{}'", options.bucket_mb));
  program.bucket_bytes = mib * program::kBytesPerMiB;
  program.precision = options.precision.empty() ? precision : cost::parse_precision(options.precision);
  const bool searched_recompute = options.recompute.empty() || options.recompute == "auto";
  program.recompute = searched_recompute ? cost::Recompute::None : cost::parse_recompute(options.recompute);
  const bool searched_zero = options.zero.empty() || options.zero == "auto";
  program.zero_stage = searched_zero ? 0 : static_cast<int>(parse_whole(options.zero, "--zero", 0, program::kMaxZeroStage));
  program.fsdp_shard = static_cast<int>(parse_whole(options.fsdp_shard, "--fsdp-shard", 0, 1 << 20));
  if (program.fsdp_shard > 0 && searched_zero) program.zero_stage = 3;  // HSDP is ZeRO 3's
  program.clip_grad_norm =
      parse_finite(options.clip_grad_norm, "--clip-grad-norm", 0, "a finite number > 0 (or 0: no clipping)");
  program.power_cap_w = parse_finite(options.power_cap, "--power-cap", 0, "a number of watts > 0 (or 0: none)");
  program.moe_imbalance =
      parse_finite(options.moe_imbalance, "--moe-imbalance", 1, "a finite number of at least 1 (1: balanced)");
  program::check_program_options(program);
  return program;
}


CLI::Option* add_strategy_option(CLI::App& command, planner::Strategy& strategy) {
  return add_enum_option(command, "--strategy", strategy, planner::kStrategyNames,
                  "burst (default), dp (data parallel), pipeline (stages and micro-batches), hybrid (burst placements "
                  "inside pipeline stages), tensor (Megatron-style tensor splits of attention and MLPs, beyond the "
                  "batch), 3d (tensor x pipeline x data parallelism with micro-batch size, ZeRO and recomputation, "
                  "for transformers; pins: --tensor-parallel, --sequence-parallel, --context-parallel, "
                  "--pipeline-stages, --virtual-stages, "
                  "--micro-batch-size, --schedule, --zero, --recompute) or auto (the fastest of those that fits)");
}

void add_shape_options(CLI::App& command, InputOptions& options) {
  command.add_option("--tensor-parallel", options.tensor_parallel,
                     "Pin the tensor-parallel size (parts of each attention and MLP; must divide the heads): "
                     "--strategy 3d, tensor, or auto (narrowed to those)");
  command.add_option("--pipeline-stages", options.pipeline_stages,
                     "Pin the pipeline stages: --strategy 3d, pipeline, hybrid, or auto (narrowed to those)");
  command.add_option("--micro-batch-size", options.micro_batch_size,
                     "Pin the samples of one data-parallel group in one micro-batch (must divide its share of the "
                     "global batch): --strategy 3d, or auto (narrowed to it)");
  command.add_option("--schedule", options.schedule,
                     "Pin the pipeline schedule: gpipe, 1f1b (the default of pipeline and hybrid), interleaved "
                     "(Megatron's interleaved 1F1B, V model chunks a rank) or zb-h1 (zero-bubble ZB-H1: backwards "
                     "split into input and weight gradients, the latter deferred into the bubble); the last two "
                     "--strategy 3d or auto, which also try them");
  command.add_option("--virtual-stages", options.virtual_stages,
                     "Pin V, the model chunks each pipeline rank holds under --schedule interleaved (implies it): "
                     "--strategy 3d or auto; the layers must cut into pipeline stages x V stages");
  command.add_flag_function(
      "--sequence-parallel,!--no-sequence-parallel",
      [&options](int64_t count) { options.sequence_parallel = count > 0; },
      "Pin Megatron's sequence parallelism on (or off) in tensor groups: norms and element-wise layers on each "
      "part's slice of the tokens, reduce-scatters and all-gathers in place of the all-reduces (default: "
      "--strategy 3d and auto try both; tensor off)");
  command.add_option("--expert-parallel", options.expert_parallel,
                     "Pin E, the data-parallel sample groups that share each moe layer's experts (expert "
                     "parallelism: E / experts a device, tokens dispatched and combined by all-to-alls; E must divide "
                     "the experts and the data-parallel groups, without tensor or context parallelism): --strategy 3d "
                     "or auto, which try 2, 4 and 8");
  command.add_option("--context-parallel", options.context_parallel,
                     "Pin C, the devices that share each sample's tokens (context parallelism: ring attention passing "
                     "keys and values around the group, two causally balanced chunks a device; 2 x C must divide "
                     "--seq): --strategy 3d or auto, which try it for samples of 16K tokens or more");
}

void add_memory_options(CLI::App& command, InputOptions& options) {
  command
      .add_option("--optimizer", options.optimizer,
                  "The optimizer whose state the memory model counts: sgd, momentum (SGD with momentum) or adam")
      ->check(CLI::IsMember(cost::kOptimizerNames.names()))
      ->capture_default_str();
  command.add_option("--device-memory", options.device_memory,
                     "Memory per device in GB for the memory check (default: the device kind's, e.g. 40 for "
                     "a100; the machine's for cpu)");
}

void refuse_empty_values(const std::vector<CLI::Option*>& text_options) {
  for (const CLI::Option* option : text_options) {
    if (option->count() > 0 && option->as<std::string>().empty()) {
      throw UserError(fmt::format("{} needs a value, got ''", option->get_name()));
    }
  }
}

planner::AutoPlanOptions plan_options(const Inputs& inputs, const planner::BurstOptions& burst) {
  planner::AutoPlanOptions options;
  static_cast<planner::BurstOptions&>(options) = burst;
  options.program = inputs.program;
  options.capacity = inputs.capacity;
  options.optimizer = inputs.optimizer;
  options.pins = inputs.pins;
  return options;
}

std::string memory_summary(const planner::ChosenPlan& chosen, const Inputs& inputs) {
  const program::DeviceMemory& peak = program::tightest_memory(chosen.memory, inputs.capacity);
  const bool over = !program::fits(chosen.memory, inputs.capacity);
  const std::string hsdp = chosen.program.fsdp_shard > 0 ? fmt::format(", FSDP shard {}", chosen.program.fsdp_shard) : "";
  return fmt::format("{} (optimizer {}, precision {}, recompute {}, ZeRO {}{}){}",
                     program::memory_text(peak, inputs.graph, inputs.capacity), cost::optimizer_name(inputs.optimizer),
                     cost::precision_name(chosen.program.precision), cost::recompute_name(chosen.program.recompute),
                     chosen.program.zero_stage, hsdp, over ? ": DOES NOT FIT" : "");
}

ModelAndBatch parse_background_option(const std::string& text, int64_t default_batch) {
  ModelAndBatch parsed{text, default_batch};
  const size_t colon = text.rfind(':');
  if (colon != std::string::npos && colon + 1 < text.size() &&
      text.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
    parsed.model = text.substr(0, colon);
    parsed.batch = parse_whole(text.substr(colon + 1), "--background's per-device batch", 1, int64_t{1} << 20);
  }
  if (parsed.model.empty() || parsed.model.back() == ':') {
    throw UserError(fmt::format("--background must be MODEL[:per-device-batch], got '{}'", text_excerpt(text)));
  }
  return parsed;
}

}  // namespace burst::cli
