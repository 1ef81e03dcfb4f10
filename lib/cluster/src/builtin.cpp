// Built-in clusters: typical published link numbers per device kind (the table and its
// sources are in docs/cluster-format.md). Defaults, not measurements.
#include <fmt/format.h>

#include "burst/cluster/cluster.h"
#include "burst/util/error.h"
#include "burst/util/json_io.h"

namespace burst::cluster {
namespace {

struct BuiltinKind {
  const char* kind;
  int devices_per_node;  // 0: one node holding every device (processes on this machine)
  double intra_gbyte_s;  // per direction
  double intra_latency_us;
  double inter_gbit_s;  // per direction, per device (one NIC per GPU on DGX-class nodes)
  double inter_latency_us;
};

// NVLink per GPU per direction: V100 6 links x 25 GB/s; A100 12 x 25 GB/s; H100/H200
// 18 x 25 GB/s (NVSwitch in A100/H100/H200 nodes). Inter-node: DGX-1/DGX A100 HDR
// InfiniBand 200 Gb/s, DGX H100/H200 NDR 400 Gb/s, one NIC per GPU. Latencies are the
// few microseconds NCCL pays per message (a step's launch and synchronisation, not the
// wire). "cpu": processes on one machine over shared memory or loopback (Gloo); the
// inter-node link is never used by a one-node cluster and is 10 Gb/s Ethernet.
constexpr BuiltinKind kKinds[] = {
    {"v100", 8, 150, 5, 200, 10},
    {"a100", 8, 300, 5, 200, 10},
    {"a100-80gb", 8, 300, 5, 200, 10},
    {"h100-sxm", 8, 450, 5, 400, 10},
    {"h200", 8, 450, 5, 400, 10},
    {"cpu", 0, 5, 20, 10, 50},
};

}  // namespace

std::vector<std::string> builtin_device_kinds() {
  std::vector<std::string> kinds;
  for (const BuiltinKind& entry : kKinds) kinds.emplace_back(entry.kind);
  return kinds;
}

Cluster builtin_cluster(const std::string& device_kind, int64_t devices) {
  const BuiltinKind* found = nullptr;
  for (const BuiltinKind& entry : kKinds) {
    if (device_kind == entry.kind) found = &entry;
  }
  if (found == nullptr) {
    std::string known;
    for (const std::string& kind : builtin_device_kinds()) known += (known.empty() ? "" : ", ") + kind;
    throw UserError(fmt::format("unknown device kind '{}' (built-in kinds: {}; for other machines "
                                "write a cluster file, see docs/cluster-format.md)",
                                text_excerpt(device_kind), known));
  }
  if (devices < 1 || devices > kMaxDevices) {
    throw UserError(fmt::format("devices must be between 1 and {}, got {}", kMaxDevices, devices));
  }
  const int total = static_cast<int>(devices);
  ClusterSpec spec;
  spec.name = fmt::format("{}x{}", found->kind, total);
  spec.device = found->kind;
  spec.devices_per_node = found->devices_per_node == 0 ? total : found->devices_per_node;
  spec.nodes = (total + spec.devices_per_node - 1) / spec.devices_per_node;
  spec.devices = total;
  spec.intra_node = {Bandwidth::gigabytes_per_s(found->intra_gbyte_s),
                     Seconds::from_us(found->intra_latency_us)};
  spec.inter_node = {Bandwidth::gigabits_per_s(found->inter_gbit_s),
                     Seconds::from_us(found->inter_latency_us)};
  return Cluster(std::move(spec));
}

}  // namespace burst::cluster
