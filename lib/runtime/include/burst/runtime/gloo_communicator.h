#pragma once
// Communicator over c10d's ProcessGroupGloo. Rank 0 hosts the TCPStore that every rank
// meets at (MASTER_ADDR:MASTER_PORT, as torchrun sets them).
#include <chrono>
#include <memory>
#include <string>

#include "burst/runtime/communicator.h"

namespace burst::runtime {

struct GlooOptions {
  int rank = 0;
  int world_size = 1;
  std::string master_address = "127.0.0.1";
  int master_port = 29500;
  // Whether rank 0 hosts the TCPStore. False under torchrun, whose agent already hosts one
  // at MASTER_PORT (it sets TORCHELASTIC_USE_AGENT_STORE=True); every rank is then a client.
  bool host_store = true;
  // How long rendezvous and every operation may take before failing.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
};

// Connects to the other ranks (blocks until all have arrived or the timeout passes).
std::unique_ptr<Communicator> make_gloo_communicator(const GlooOptions& options);

}  // namespace burst::runtime
