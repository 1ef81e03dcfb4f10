#pragma once
// Communicator over c10d's process groups: ProcessGroupGloo always, ProcessGroupNCCL too for
// a CUDA run (below). The ranks meet at a rendezvous store:
//  - one process alone: an in-process HashStore (no file, no port);
//  - burst's local launcher (--nproc): a FileStore in the launcher's private directory
//    (mode 0700, removed at the end), so nothing listens on a network port for it;
//  - otherwise (torchrun, Slurm, Open MPI): a TCPStore at MASTER_ADDR:MASTER_PORT, hosted
//    by rank 0 or by torchrun's agent. libtorch 1.13's TCPStore listens on every interface
//    (docs/runtime.md, "What a run exposes").
// Gloo's own sockets bind, as torch's do: the interfaces in `socket_interfaces`
// (GLOO_SOCKET_IFNAME); else 127.0.0.1 when the master address is loopback (or one rank
// alone); else the address this host reaches the master from (launch/network_address.h),
// never loopback. A connection that fails is a RunFailure naming the rank and that address.
//
// A CUDA run (`nccl`) also makes c10d ProcessGroupNCCL groups over the same store (NCCL
// binds NCCL_SOCKET_IFNAME's interfaces, torch's rule): tensors on a GPU (the step's messages
// and gradient all-reduces) go through NCCL, tensors on the CPU (the loss, gathered
// parameters, traces) through Gloo. NCCL matches a pair's messages by issue order alone,
// which the step program keeps (communicator.h's contract).
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "burst/runtime/communicator.h"

namespace burst::runtime {

struct C10dOptions {
  int rank = 0;
  int world_size = 1;
  std::string master_address = "127.0.0.1";
  int master_port = 29500;
  // Whether rank 0 hosts the TCPStore. False under torchrun, whose agent already hosts one
  // at MASTER_PORT (it sets TORCHELASTIC_USE_AGENT_STORE=True); every rank is then a client.
  bool host_store = true;
  // Non-empty: meet through a c10d FileStore at this path instead of the TCPStore.
  std::string rendezvous_file;
  // Interfaces Gloo's sockets bind (GLOO_SOCKET_IFNAME, checked: launch::socket_interfaces);
  // empty: the rule above.
  std::vector<std::string> socket_interfaces;
  // How long rendezvous and every operation may take before failing.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  // GPU tensors over NCCL (a CUDA build; UserError otherwise). NCCL's streams run at high
  // priority, beside the foreground's (device.h's StepStream).
  bool nccl = false;
};

// Connects to the other ranks (blocks until all have arrived or the timeout passes).
std::unique_ptr<Communicator> make_c10d_communicator(const C10dOptions& options);

}  // namespace burst::runtime
