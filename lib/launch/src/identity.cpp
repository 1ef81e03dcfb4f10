#include "burst/launch/identity.h"

#include <fmt/format.h>

#include <cstdlib>
#include <utility>

#include "burst/util/error.h"
#include "burst/util/json_io.h"

namespace burst::launch {
namespace {

// The variable names one launcher uses.
struct LauncherVariables {
  const char* launcher;
  const char* rank;
  const char* world_size;
  const char* local_rank;
  // Set by the launcher to the number of ranks on this machine, or to the number of
  // machines (single_node_when_one), telling whether loopback reaches rank 0.
  const char* local_world_size;
  bool single_node_when_one;
};

constexpr LauncherVariables kTorchrun = {"torchrun",         "RANK", "WORLD_SIZE", "LOCAL_RANK",
                                         "LOCAL_WORLD_SIZE", false};
constexpr LauncherVariables kSlurm = {"slurm",         "SLURM_PROCID", "SLURM_NTASKS",
                                      "SLURM_LOCALID", "SLURM_NNODES", true};
constexpr LauncherVariables kOpenMpi = {"openmpi",
                                        "OMPI_COMM_WORLD_RANK",
                                        "OMPI_COMM_WORLD_SIZE",
                                        "OMPI_COMM_WORLD_LOCAL_RANK",
                                        "OMPI_COMM_WORLD_LOCAL_SIZE",
                                        false};

// A decimal integer in [min, max]: digits only (an optional '-' to report negatives
// clearly), no spaces, no '+', no trailing text.
int parse_integer(const std::string& name, const std::string& value, long min, long max,
                  const std::string& range_text) {
  const auto fail = [&](const std::string& problem) {
    return UserError(
        fmt::format("environment variable {}={}: {}", name, text_excerpt(value), problem));
  };
  const size_t digits_from = !value.empty() && value[0] == '-' ? 1 : 0;
  if (value.size() == digits_from || value.size() > 12 ||
      value.find_first_not_of("0123456789", digits_from) != std::string::npos) {
    throw fail("not a decimal integer");
  }
  const long parsed = std::strtol(value.c_str(), nullptr, 10);  // <= 12 chars: no overflow
  if (parsed < 0 && min >= 0) throw fail("negative, expected " + range_text);
  if (parsed < min || parsed > max) throw fail("out of range, expected " + range_text);
  return static_cast<int>(parsed);
}

std::string require(const EnvironmentLookup& environment, const LauncherVariables& names,
                    const char* name) {
  std::optional<std::string> value = environment(name);
  if (!value) {
    throw UserError(
        fmt::format("environment variable {} is not set; a {} launch sets both {} "
                    "and {}",
                    name, names.launcher, names.rank, names.world_size));
  }
  return *value;
}

WorkerIdentity read_identity(const EnvironmentLookup& environment, const LauncherVariables& names) {
  WorkerIdentity identity;
  identity.launcher = names.launcher;
  identity.world_size =
      parse_integer(names.world_size, require(environment, names, names.world_size), 1,
                    kMaxWorldSize, fmt::format("1 to {}", kMaxWorldSize));
  const std::string below_world = fmt::format("0 to {} (below {}={})", identity.world_size - 1,
                                              names.world_size, identity.world_size);
  identity.rank = parse_integer(names.rank, require(environment, names, names.rank), 0,
                                identity.world_size - 1, below_world);
  const std::optional<std::string> local_rank = environment(names.local_rank);
  identity.local_rank = local_rank ? parse_integer(names.local_rank, *local_rank, 0,
                                                   identity.world_size - 1, below_world)
                                   : identity.rank;

  if (const std::optional<std::string> file = environment(kRendezvousFileVariable)) identity.rendezvous_file = *file;
  if (const std::optional<std::string> port = environment("MASTER_PORT")) {
    identity.master_port = parse_integer("MASTER_PORT", *port, 1, 65535, "1 to 65535");
  } else {
    identity.master_port = kDefaultMasterPort;
  }

  if (const std::optional<std::string> address = environment("MASTER_ADDR")) {
    if (address->empty()) throw UserError("environment variable MASTER_ADDR is empty");
    identity.master_addr = *address;
    return identity;
  }
  bool single_machine = identity.world_size == 1;
  if (const std::optional<std::string> local = environment(names.local_world_size)) {
    const int local_size = parse_integer(names.local_world_size, *local, 1, kMaxWorldSize,
                                         fmt::format("1 to {}", kMaxWorldSize));
    single_machine |=
        names.single_node_when_one ? local_size == 1 : local_size == identity.world_size;
  }
  if (!single_machine) {
    throw UserError(fmt::format(
        "environment variable MASTER_ADDR is not set and the {} ranks of this {} job may span "
        "several machines: set MASTER_ADDR to the host of rank 0 (under Slurm, e.g. "
        "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1))",
        identity.world_size, names.launcher));
  }
  identity.master_addr = kLoopbackAddress;
  return identity;
}

}  // namespace

EnvironmentLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

EnvironmentLookup environment_from_map(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](const std::string& name) -> std::optional<std::string> {
    const auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

std::optional<WorkerIdentity> detect_identity(const EnvironmentLookup& environment) {
  if (environment("RANK") || environment("WORLD_SIZE"))
    return read_identity(environment, kTorchrun);
  if (environment("SLURM_PROCID")) return read_identity(environment, kSlurm);
  if (environment("OMPI_COMM_WORLD_RANK")) return read_identity(environment, kOpenMpi);
  return std::nullopt;
}

}  // namespace burst::launch
