// Built-in clusters: typical published link numbers per device kind (the table and its
// sources are in docs/cluster-format.md). Defaults, not measurements.
#include <algorithm>
#include <optional>

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
// 18 x 25 GB/s (NVSwitch in A100/H100/H200 nodes); B200 and GB200 NVLink 5, 18 x 50 GB/s, the
// GB200 NVL72's one NVLink domain spanning 72 GPUs (a "node" here is an NVLink domain, so
// gb200 groups 72 devices per node). Inter-node: DGX-1/DGX A100 HDR
// InfiniBand 200 Gb/s, DGX H100/H200/B200 and GB200 NDR 400 Gb/s, one NIC per GPU. Latencies are the
// few microseconds NCCL pays per message (a step's launch and synchronisation, not the
// wire). "cpu": processes on one machine over shared memory or loopback (Gloo); the
// inter-node link is never used by a one-node cluster and is 10 Gb/s Ethernet.
constexpr BuiltinKind kKinds[] = {
    {"v100", 8, 150, 5, 200, 10},
    {"a100", 8, 300, 5, 200, 10},
    {"a100-80gb", 8, 300, 5, 200, 10},
    {"h100-sxm", 8, 450, 5, 400, 10},
    {"h200", 8, 450, 5, 400, 10},
    {"b200", 8, 900, 5, 400, 10},
    {"gb200", 72, 900, 5, 400, 10},
    {"cpu", 0, 5, 20, 10, 50},
};

const BuiltinKind& find_kind(const std::string& device_kind) {
  for (const BuiltinKind& entry : kKinds) {
    if (device_kind == entry.kind) return entry;
  }
  std::string known;
  for (const BuiltinKind& entry : kKinds) known += fmt::format("{}{}", known.empty() ? "" : ", ", entry.kind);
  throw UserError(fmt::format("unknown device kind '{}' (built-in kinds: {}; for other machines "
                              "write a cluster file, see docs/cluster-format.md)",
                              text_excerpt(device_kind), known));
}

DeviceGroup builtin_group(const BuiltinKind& kind, int devices) {
  DeviceGroup group;
  group.device = kind.kind;
  group.devices_per_node = kind.devices_per_node == 0 ? devices : kind.devices_per_node;
  group.nodes = (devices + group.devices_per_node - 1) / group.devices_per_node;
  group.devices = devices;
  group.intra_node = {Bandwidth::gigabytes_per_s(kind.intra_gbyte_s), Seconds::from_us(kind.intra_latency_us)};
  group.inter_node = {Bandwidth::gigabits_per_s(kind.inter_gbit_s), Seconds::from_us(kind.inter_latency_us)};
  return group;
}

// A count of 1..kMaxDevices written in decimal digits only, or nullopt.
std::optional<int> parse_count(const std::string& text) {
  if (text.empty() || text.size() > 7) return std::nullopt;
  int64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > kMaxDevices) return std::nullopt;
  return static_cast<int>(value);
}

}  // namespace

std::vector<std::string> builtin_device_kinds() {
  std::vector<std::string> kinds;
  for (const BuiltinKind& entry : kKinds) kinds.emplace_back(entry.kind);
  return kinds;
}

Cluster builtin_cluster(const std::string& device_kind, int64_t devices) {
  const BuiltinKind& kind = find_kind(device_kind);
  if (devices < 1 || devices > kMaxDevices) {
    throw UserError(fmt::format("devices must be between 1 and {}, got {}", kMaxDevices, devices));
  }
  const int total = static_cast<int>(devices);
  DeviceGroup group = builtin_group(kind, total);
  return Cluster(ClusterSpec{fmt::format("{}x{}", kind.kind, total), group.device, group.nodes,
                             group.devices_per_node, group.devices, group.intra_node, group.inter_node});
}

Cluster builtin_mixed_cluster(const std::string& devices_list, const std::string& default_kind) {
  if (const auto count = parse_count(devices_list)) return builtin_cluster(default_kind, *count);
  MixedClusterSpec spec;
  std::string name;
  size_t begin = 0;
  while (begin <= devices_list.size()) {
    const size_t comma = std::min(devices_list.find(',', begin), devices_list.size());
    const std::string entry = devices_list.substr(begin, comma - begin);
    const size_t colon = entry.find(':');
    const auto count = colon == std::string::npos ? std::nullopt : parse_count(entry.substr(colon + 1));
    if (!count) {
      throw UserError(fmt::format("--devices '{}': entry '{}' is not KIND:COUNT with a count from 1 to {} "
                                  "(for example a100:8,v100:8)",
                                  text_excerpt(devices_list), text_excerpt(entry), kMaxDevices));
    }
    const BuiltinKind& kind = find_kind(entry.substr(0, colon));
    spec.groups.push_back(builtin_group(kind, *count));
    name += fmt::format("{}{}x{}", name.empty() ? "" : "+", kind.kind, *count);
    // Groups meet over the slower of their inter-node networks.
    const Link inter = spec.groups.back().inter_node;
    if (!spec.between_groups || inter.bandwidth.bytes_per_second() < spec.between_groups->bandwidth.bytes_per_second()) {
      spec.between_groups = inter;
    }
    begin = comma + 1;
  }
  if (spec.groups.size() == 1) spec.between_groups.reset();
  spec.name = name.size() <= 128 ? name : "mixed";
  return Cluster(std::move(spec));
}

}  // namespace burst::cluster
