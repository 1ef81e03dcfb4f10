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
inline constexpr int kClusterFormatVersion = 2;  // reads 1 (one kind) and 2 (groups)
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

// What a one-kind cluster is made from (cluster files of version 1, built-in clusters);
// Cluster's constructor validates it.
struct ClusterSpec {
  std::string name;            // for reports; printable, at most 128 bytes
  std::string device;          // device kind: "a100", "h100-sxm", "cpu", ... ([a-z0-9._-]+)
  int nodes = 0;               // >= 1
  int devices_per_node = 0;    // >= 1
  std::optional<int> devices;  // total; default nodes * devices_per_node (see above)
  Link intra_node;
  Link inter_node;  // unused when there is one node, but always given
};

// One group of a mixed cluster: nodes of one device kind, filled as a one-kind cluster's
// (only the group's last node may be partly filled), with its own two links and,
// optionally, its devices' memory (none: the device kind's catalog capacity).
struct DeviceGroup {
  std::string device;
  int nodes = 0;
  int devices_per_node = 0;
  std::optional<int> devices;  // the group's total; default nodes * devices_per_node
  Link intra_node;
  Link inter_node;
  std::optional<Bytes> memory;  // per device
  // A power limit per device, watts (nvidia-smi -pl; torchtitan's H100s ran at 500 W): the
  // step's --power-cap when the command gives none.
  std::optional<double> power_cap_w;
};

// A cluster of several groups (cluster files of version 2, `--devices a100:8,v100:8`).
// Ranks fill the groups in order, and nodes are numbered across groups in that order: with
// groups of 8 A100s and 8 V100s in nodes of 8, ranks 0..7 are node 0's A100s and 8..15
// node 1's V100s. Two ranks in different groups are connected by `between_groups` (the
// link between the groups' networks: per direction, per device, as inter_node).
struct MixedClusterSpec {
  std::string name;
  std::vector<DeviceGroup> groups;  // >= 1
  std::optional<Link> between_groups;  // required with two or more groups
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
  // The same checks per group (naming the group: "group 1 (v100): nodes must be ..."), a
  // memory that is positive and finite, at least one group, at most kMaxDevices in all,
  // and a between_groups link when there are two or more groups.
  explicit Cluster(MixedClusterSpec spec);

  const std::string& name() const { return name_; }
  // The first group's kind: the device kind of a one-kind cluster. Code that may see a
  // mixed cluster asks kind_of(rank) or kinds().
  const std::string& device() const { return groups_.front().device; }
  // Nodes in all (groups' nodes added).
  int nodes() const { return nodes_; }
  // The first group's (all a one-kind cluster's nodes); mixed: use node_of.
  int devices_per_node() const { return groups_.front().devices_per_node; }
  // The first group's links (a one-kind cluster's two links); mixed: use link(a, b).
  const Link& intra_node() const { return groups_.front().intra_node; }
  const Link& inter_node() const { return groups_.front().inter_node; }

  // The groups, in rank order, with `devices` always set (one for a one-kind cluster).
  const std::vector<DeviceGroup>& groups() const { return groups_; }
  // The link between ranks of different groups (unused with one group).
  const std::optional<Link>& between_groups() const { return between_groups_; }
  // Whether the cluster has two or more groups (its ranks may differ in kind, memory or links).
  bool mixed() const { return groups_.size() > 1; }
  // The distinct device kinds, in the order of their first group.
  const std::vector<std::string>& kinds() const { return kinds_; }
  // The first rank of group `group` (group == groups().size(): size()).
  int first_rank_of_group(int group) const { return group_first_rank_.at(static_cast<size_t>(group)); }
  // The group of `rank`, the index of its kind in kinds(), and its kind. Throw UserError
  // for a rank outside the cluster.
  int group_of(int rank) const;
  int kind_index(int rank) const { return group_kind_[static_cast<size_t>(group_of(rank))]; }
  const std::string& kind_of(int rank) const { return groups_[static_cast<size_t>(group_of(rank))].device; }
  // The ranks of kind kinds()[kind], ascending.
  std::vector<int> ranks_of_kind(int kind) const;

  // The cluster of this one's first `devices` ranks (1 <= devices <= size()): its groups
  // cut at that rank, the same links. For planning on part of a cluster.
  Cluster first_ranks(int devices) const;

  // Total devices (ranks 0..size()-1).
  int size() const { return size_; }
  // Devices on node `node` (devices_per_node, or fewer on a group's partly filled last node).
  int devices_on_node(int node) const;
  // The node of `rank`. Throws UserError when rank is outside [0, size()).
  int node_of(int rank) const;
  bool same_node(int a, int b) const { return node_of(a) == node_of(b); }
  // The link between two ranks: their group's intra_node on one node (also for a == b),
  // its inter_node on two nodes of one group, between_groups across groups. Throws
  // UserError for a rank outside the cluster.
  const Link& link(int a, int b) const;

  bool operator==(const Cluster& other) const;
  bool operator!=(const Cluster& other) const { return !(*this == other); }

 private:
  void index_groups();

  std::string name_;
  std::vector<DeviceGroup> groups_;
  std::optional<Link> between_groups_;
  std::vector<std::string> kinds_;
  std::vector<int> group_kind_;         // per group: index into kinds_
  std::vector<int> group_first_rank_;   // per group, and size_ at the end
  std::vector<int> group_first_node_;   // per group, and nodes_ at the end
  int size_ = 0;
  int nodes_ = 0;
};

// ---- cluster files (format "burst.cluster", versions 1 and 2) ---------------------------
//
// Version 1, one kind:
// {"format": "burst.cluster", "version": 1, "name": "lab-2x8-a100", "device": "a100",
//  "nodes": 2, "devices_per_node": 8,
//  "intra_node": {"bandwidth_gbyte_s": 300, "latency_us": 5},
//  "inter_node": {"bandwidth_gbit_s": 200, "latency_us": 10}}
//
// A link gives its bandwidth in exactly one of "bandwidth_gbyte_s" (10^9 bytes/s, how
// NVLink is quoted) or "bandwidth_gbit_s" (10^9 bits/s, how NICs are quoted), per
// direction, and "latency_us" in microseconds. "devices" is optional (see above).
//
// Version 2, groups of nodes (a group is a version-1 cluster without its name, plus an
// optional "memory_gib" per device), and the link between groups:
// {"format": "burst.cluster", "version": 2, "name": "mixed",
//  "groups": [{"device": "a100", "nodes": 1, "devices_per_node": 8, "intra_node": {...},
//              "inter_node": {...}},
//             {"device": "v100", "nodes": 1, "devices_per_node": 8, "memory_gib": 32, ...}],
//  "between_groups": {"bandwidth_gbit_s": 100, "latency_us": 10}}

// Canonical JSON: intra_node in gbyte_s, inter_node in gbit_s; "devices" only when the
// last node is partly filled. Version 1 for one group without a memory, else version 2.
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

// A mixed cluster from a `--devices` list: "a100:8,v100:8" is a group of 8 A100s then a
// group of 8 V100s, each in the built-in kind's nodes and links; groups are joined by the
// slower of the kinds' inter-node links. A bare count ("16", the one-kind form) needs
// `default_kind`. Throws UserError for a malformed entry (naming it), an unknown kind or a
// count outside [1, kMaxDevices].
Cluster builtin_mixed_cluster(const std::string& devices_list, const std::string& default_kind);

// The power cap the cluster file states (every group's power_cap_w, which must agree; the
// step takes one cap for all devices), or nullopt when no group states one. UserError when
// groups state different caps or only some state one.
std::optional<double> stated_power_cap(const Cluster& cluster);

}  // namespace burst::cluster
