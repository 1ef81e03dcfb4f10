#pragma once
// How a worker process learns its place in the job, the way torchrun, Slurm and Open MPI
// tell it: through environment variables. The environment is a parameter (a lookup
// function), so tests pass a map and nothing reads the process environment behind a
// caller's back.
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace burst::launch {

// Rendezvous defaults when the launcher does not give them: torch's usual store port, and
// loopback, which is right only when every rank is on this machine (see detect_identity).
inline constexpr int kDefaultMasterPort = 29500;
inline constexpr const char* kLoopbackAddress = "127.0.0.1";
// Sanity limit: more ranks than this is a mistake (matches the cluster's device limit).
inline constexpr int kMaxWorldSize = 1'000'000;
// Set by burst's own local launcher (--nproc): the file of the rendezvous store, in a
// directory only this user can enter, so a local run opens no TCP port for it.
inline constexpr const char* kRendezvousFileVariable = "BURST_RENDEZVOUS_FILE";

struct WorkerIdentity {
  int rank = 0;        // [0, world_size)
  int world_size = 1;  // >= 1
  int local_rank = 0;  // index among the ranks on this machine: [0, world_size); picks the device
  std::string master_addr;  // host of rank 0's rendezvous store
  int master_port = 0;      // [1, 65535]
  std::string launcher;     // where it came from: "torchrun", "slurm" or "openmpi"
  // Non-empty: meet through this store file (kRendezvousFileVariable) instead of a TCP
  // store at master_addr:master_port.
  std::string rendezvous_file;

  bool operator==(const WorkerIdentity& other) const {
    return rank == other.rank && world_size == other.world_size &&
           local_rank == other.local_rank && master_addr == other.master_addr &&
           master_port == other.master_port && launcher == other.launcher &&
           rendezvous_file == other.rendezvous_file;
  }
};

// Looks up one environment variable: its value, or nullopt when unset.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment (getenv), for main.
EnvironmentLookup process_environment();
// A fixed set of variables, for tests and for building a child's environment.
EnvironmentLookup environment_from_map(std::map<std::string, std::string> variables);

// The identity the environment describes, trying in this order (the first whose marker
// variable is set wins, so torchrun inside a Slurm allocation is torchrun):
//  1. torchrun (marker RANK or WORLD_SIZE): RANK, WORLD_SIZE required; LOCAL_RANK
//     (default: RANK); MASTER_ADDR, MASTER_PORT.
//  2. Slurm (marker SLURM_PROCID): SLURM_PROCID, SLURM_NTASKS required; SLURM_LOCALID
//     (default: SLURM_PROCID); MASTER_ADDR, MASTER_PORT.
//  3. Open MPI (marker OMPI_COMM_WORLD_RANK): OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE
//     required; OMPI_COMM_WORLD_LOCAL_RANK (default: rank); MASTER_ADDR, MASTER_PORT.
// MASTER_PORT defaults to kDefaultMasterPort. MASTER_ADDR defaults to loopback only when
// all ranks provably run on this machine: world size 1, or the launcher says so
// (LOCAL_WORLD_SIZE == WORLD_SIZE; SLURM_NNODES == 1; OMPI_COMM_WORLD_LOCAL_SIZE ==
// OMPI_COMM_WORLD_SIZE). Otherwise a missing MASTER_ADDR is an error, since each node
// rendezvousing with itself would hang instead of failing.
// kRendezvousFileVariable, when set and non-empty, becomes rendezvous_file.
// Returns nullopt when no marker is set (a plain single process). Throws UserError naming
// the variable and its value when one is malformed: not a decimal integer, negative,
// rank >= world size, world size 0 or above kMaxWorldSize, port outside [1, 65535], an
// empty MASTER_ADDR, or a required variable missing.
std::optional<WorkerIdentity> detect_identity(const EnvironmentLookup& environment);

}  // namespace burst::launch
