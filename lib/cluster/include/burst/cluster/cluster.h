#pragma once
// The cluster: how many devices, how they are grouped into nodes, and the two links that
// connect them (see docs/cluster-format.md).
//
// Ranks are 0..size()-1 and fill nodes in order: rank r lives on node r / devices_per_node.
// Every node holds devices_per_node devices except possibly the last, which holds the
// remainder (so 12 devices in nodes of 8 are nodes {0..7} and {8..11}). A cluster with a
// partly filled last node is what `burst cluster --device a100 --devices 12` means; a
// cluster file can say so with its optional "devices" field.
//
// The model has exactly two links: every pair of ranks on one node is connected by the
// intra-node link (NVLink/NVSwitch, shared memory), every pair on different nodes by the
// inter-node link (InfiniBand, Ethernet). Bandwidths are per direction and per device:
// what one device can send while every other device does the same (so a node with one
// 200 Gb/s NIC per GPU has an inter-node bandwidth of 200 Gb/s; a node whose 8 GPUs
// share one 400 Gb/s NIC has 50 Gb/s).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "burst/util/units.h"

namespace burst::cluster {

inline constexpr const char* kClusterFormat = "burst.cluster";
inline constexpr int kClusterFormatVersion = 1;
// Sanity limits; anything beyond them is a mistake in a file or on a command line.
inline constexpr int kMaxDevices = 1'000'000;
inline constexpr double kMaxLatencySeconds = 1.0;            // a unit mix-up (ns for us)
inline constexpr double kMaxBandwidthBytesPerSecond = 1e15;  // 1 PB/s per direction

// One link kind. A message of S bytes takes latency + S / bandwidth (the alpha-beta model).
struct Link {
  Bandwidth bandwidth;  // bytes per second, per direction, per device
  Seconds latency;      // per message: software, NIC and switch latency together

  bool operator==(const Link& other) const {
    return bandwidth.bytes_per_second() == other.bandwidth.bytes_per_second() &&
           latency == other.latency;
  }
  bool operator!=(const Link& other) const { return !(*this == other); }
};

// What a cluster is made from; Cluster's constructor validates it.
struct ClusterSpec {
  std::string name;            // for reports; printable, at most 128 bytes
  std::string device;          // device kind: "a100", "h100-sxm", "cpu", ... ([a-z0-9._-]+)
  int nodes = 0;               // >= 1
  int devices_per_node = 0;    // >= 1
  std::optional<int> devices;  // total; default nodes * devices_per_node (see above)
  Link intra_node;
  Link inter_node;  // unused when there is one node, but always given
};

class Cluster {
 public:
  // Validates `spec` and throws UserError naming the field and value:
  //  - nodes, devices_per_node >= 1 and nodes * devices_per_node <= kMaxDevices;
  //  - devices (if given) fills the last node at least partly:
  //    (nodes - 1) * devices_per_node < devices <= nodes * devices_per_node;
  //  - bandwidths positive, finite and <= kMaxBandwidthBytesPerSecond;
  //  - latencies finite, >= 0 and <= kMaxLatencySeconds;
  //  - device kind non-empty, at most 64 of [a-z0-9._-]; name at most 128 printable bytes.
  explicit Cluster(ClusterSpec spec);

  const std::string& name() const { return spec_.name; }
  const std::string& device() const { return spec_.device; }
  int nodes() const { return spec_.nodes; }
  int devices_per_node() const { return spec_.devices_per_node; }
  const Link& intra_node() const { return spec_.intra_node; }
  const Link& inter_node() const { return spec_.inter_node; }
  const ClusterSpec& spec() const { return spec_; }

  // Total devices (ranks 0..size()-1).
  int size() const { return size_; }
  // Devices on node `node` (devices_per_node, or fewer on a partly filled last node).
  int devices_on_node(int node) const;
  // The node of `rank`. Throws UserError when rank is outside [0, size()).
  int node_of(int rank) const;
  bool same_node(int a, int b) const { return node_of(a) == node_of(b); }
  // The link between two ranks: intra_node() on one node (also for a == b), else
  // inter_node(). Throws UserError for a rank outside the cluster.
  const Link& link(int a, int b) const;

  bool operator==(const Cluster& other) const;
  bool operator!=(const Cluster& other) const { return !(*this == other); }

 private:
  ClusterSpec spec_;
  int size_ = 0;
};

// ---- cluster files (format "burst.cluster", version 1) -----------------------------------
//
// {"format": "burst.cluster", "version": 1, "name": "lab-2x8-a100", "device": "a100",
//  "nodes": 2, "devices_per_node": 8,
//  "intra_node": {"bandwidth_gbyte_s": 300, "latency_us": 5},
//  "inter_node": {"bandwidth_gbit_s": 200, "latency_us": 10}}
//
// A link gives its bandwidth in exactly one of "bandwidth_gbyte_s" (10^9 bytes/s, how
// NVLink is quoted) or "bandwidth_gbit_s" (10^9 bits/s, how NICs are quoted), per
// direction, and "latency_us" in microseconds. "devices" is optional (see above).

// Canonical JSON: intra_node in gbyte_s, inter_node in gbit_s; "devices" only when the
// last node is partly filled.
nlohmann::json cluster_to_json(const Cluster& cluster);

// Parses and validates a cluster document. Throws UserError with a one-line reason naming
// the field ("cluster file: field 'inter_node.latency_us' must be >= 0, got -1").
Cluster cluster_from_json(const nlohmann::json& document);
Cluster cluster_from_text(const std::string& text);  // text -> JSON -> Cluster
// Reads a cluster file; errors are prefixed with the path.
Cluster load_cluster_file(const std::string& path);
// Writes cluster_to_json with 2-space indentation, atomically.
void save_cluster_file(const Cluster& cluster, const std::string& path);

// ---- built-in clusters ------------------------------------------------------------------
//
// Defaults for common machines, for planning without a cluster file. They are typical
// published numbers (docs/cluster-format.md lists them with their sources), not a
// measurement of any particular machine: users should write a cluster file for theirs.
//  - GPU kinds ("v100", "a100", "a100-80gb", "h100-sxm", "h200"): nodes of 8 GPUs, as
//    many nodes as `devices` needs, the last one partly filled if devices % 8 != 0.
//  - "cpu": one node of `devices` processes on this machine, connected by shared memory
//    or loopback.

// The kinds builtin_cluster knows, in a fixed order.
std::vector<std::string> builtin_device_kinds();

// A cluster of `devices` devices of kind `device_kind`. Throws UserError for an unknown
// kind (listing the known ones) or devices outside [1, kMaxDevices].
Cluster builtin_cluster(const std::string& device_kind, int64_t devices);

}  // namespace burst::cluster
