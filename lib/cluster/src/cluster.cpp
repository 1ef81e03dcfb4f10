#include "burst/cluster/cluster.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "burst/util/checked_math.h"
#include "burst/util/error.h"
#include "burst/util/json_io.h"

namespace burst::cluster {
namespace {

constexpr size_t kMaxNameLength = 128;
constexpr size_t kMaxDeviceLength = 64;

bool is_device_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

void check_link(const std::string& where, const char* which, const Link& link) {
  const double bandwidth = link.bandwidth.bytes_per_second();
  if (!std::isfinite(bandwidth) || bandwidth <= 0 || bandwidth > kMaxBandwidthBytesPerSecond) {
    throw UserError(fmt::format("{}: {} bandwidth must be positive and at most {:g} bytes/s, "
                                "got {:g}", where, which, kMaxBandwidthBytesPerSecond, bandwidth));
  }
  const double latency = link.latency.s();
  if (!std::isfinite(latency) || latency < 0 || latency > kMaxLatencySeconds) {
    throw UserError(fmt::format("{}: {} latency must be between 0 and {:g} s, got {:g} s", where,
                                which, kMaxLatencySeconds, latency));
  }
}

// Checks one group's counts, kind and links; returns its device count. `where` names it.
int check_group(const std::string& where, DeviceGroup& group) {
  if (group.device.empty() || group.device.size() > kMaxDeviceLength) {
    throw UserError(fmt::format("{}: device kind must be 1 to {} characters long", where,
                                kMaxDeviceLength));
  }
  for (const char c : group.device) {
    if (!is_device_char(c)) {
      throw UserError(fmt::format("{}: device kind '{}' may hold only a-z, 0-9, '.', '_' and "
                                  "'-'", where, text_excerpt(group.device)));
    }
  }
  if (group.nodes < 1 || group.nodes > kMaxDevices) {
    throw UserError(fmt::format("{}: nodes must be between 1 and {}, got {}", where, kMaxDevices,
                                group.nodes));
  }
  if (group.devices_per_node < 1 || group.devices_per_node > kMaxDevices) {
    throw UserError(fmt::format("{}: devices_per_node must be between 1 and {}, got {}", where,
                                kMaxDevices, group.devices_per_node));
  }
  const auto capacity = checked_mul(group.nodes, group.devices_per_node);
  if (!capacity || *capacity > kMaxDevices) {
    throw UserError(fmt::format("{}: {} nodes x {} devices per node is more than {} devices",
                                where, group.nodes, group.devices_per_node, kMaxDevices));
  }
  if (group.devices) {
    // At least one device on the last node, and no more devices than the nodes hold.
    const int64_t full_nodes_before_last = static_cast<int64_t>(group.nodes - 1) * group.devices_per_node;
    if (*group.devices <= full_nodes_before_last || *group.devices > *capacity) {
      throw UserError(fmt::format(
          "{}: devices must be between {} and {} for {} nodes of {} (only the last node may be "
          "partly filled), got {}",
          where, full_nodes_before_last + 1, *capacity, group.nodes, group.devices_per_node,
          *group.devices));
    }
  }
  check_link(where, "intra_node", group.intra_node);
  check_link(where, "inter_node", group.inter_node);
  if (group.memory && !(std::isfinite(group.memory->value()) && group.memory->value() > 0)) {
    throw UserError(fmt::format("{}: memory must be positive and finite, got {:g} bytes", where,
                                group.memory->value()));
  }
  return group.devices ? *group.devices : static_cast<int>(*capacity);
}

void check_name(const std::string& where, const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength) {
    throw UserError(fmt::format("{}: name must be 1 to {} bytes long", where, kMaxNameLength));
  }
  for (const char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      throw UserError(fmt::format("{}: name contains a control character", where));
    }
  }
}

}  // namespace

Cluster::Cluster(ClusterSpec spec) : name_(std::move(spec.name)) {
  const std::string where = fmt::format("cluster '{}'", text_excerpt(name_));
  check_name(where, name_);
  DeviceGroup group{std::move(spec.device), spec.nodes,      spec.devices_per_node, spec.devices,
                    spec.intra_node,        spec.inter_node, std::nullopt, std::nullopt};
  group.devices = check_group(where, group);
  groups_.push_back(std::move(group));
  index_groups();
}

Cluster::Cluster(MixedClusterSpec spec)
    : name_(std::move(spec.name)), groups_(std::move(spec.groups)), between_groups_(spec.between_groups) {
  const std::string where = fmt::format("cluster '{}'", text_excerpt(name_));
  check_name(where, name_);
  if (groups_.empty()) throw UserError(fmt::format("{}: a cluster needs at least one group", where));
  int64_t total = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    DeviceGroup& group = groups_[g];
    group.devices = check_group(fmt::format("{}: group {} ({})", where, g, text_excerpt(group.device)), group);
    total += *group.devices;
    if (total > kMaxDevices) {
      throw UserError(fmt::format("{}: the groups hold more than {} devices", where, kMaxDevices));
    }
  }
  if (groups_.size() > 1 && !between_groups_) {
    throw UserError(fmt::format("{}: {} groups need a between_groups link", where, groups_.size()));
  }
  if (between_groups_) check_link(where, "between_groups", *between_groups_);
  index_groups();
}

void Cluster::index_groups() {
  size_ = nodes_ = 0;
  for (const DeviceGroup& group : groups_) {
    group_first_rank_.push_back(size_);
    group_first_node_.push_back(nodes_);
    size_ += *group.devices;
    nodes_ += group.nodes;
    const auto known = std::find(kinds_.begin(), kinds_.end(), group.device);
    group_kind_.push_back(static_cast<int>(known - kinds_.begin()));
    if (known == kinds_.end()) kinds_.push_back(group.device);
  }
  group_first_rank_.push_back(size_);
  group_first_node_.push_back(nodes_);
}

int Cluster::group_of(int rank) const {
  if (rank < 0 || rank >= size_) {
    throw UserError(fmt::format("rank {} is outside cluster '{}' of {} devices", rank,
                                text_excerpt(name_), size_));
  }
  int group = 0;
  while (rank >= group_first_rank_[static_cast<size_t>(group) + 1]) ++group;
  return group;
}

std::vector<int> Cluster::ranks_of_kind(int kind) const {
  std::vector<int> ranks;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (group_kind_[g] != kind) continue;
    for (int rank = group_first_rank_[g]; rank < group_first_rank_[g + 1]; ++rank) ranks.push_back(rank);
  }
  return ranks;
}

Cluster Cluster::first_ranks(int devices) const {
  BURST_ASSERT(devices >= 1 && devices <= size_, fmt::format("first {} ranks of {}", devices, size_));
  MixedClusterSpec spec{name_, {}, between_groups_};
  for (size_t g = 0; g < groups_.size() && group_first_rank_[g] < devices; ++g) {
    DeviceGroup group = groups_[g];
    const int kept = std::min(*group.devices, devices - group_first_rank_[g]);
    group.devices = kept;
    group.nodes = (kept + group.devices_per_node - 1) / group.devices_per_node;
    spec.groups.push_back(std::move(group));
  }
  if (spec.groups.size() == 1) spec.between_groups.reset();
  return Cluster(std::move(spec));
}

int Cluster::devices_on_node(int node) const {
  if (node < 0 || node >= nodes_) {
    throw UserError(fmt::format("node {} is outside cluster '{}' of {} nodes", node,
                                text_excerpt(name_), nodes_));
  }
  size_t g = 0;
  while (node >= group_first_node_[g + 1]) ++g;
  const DeviceGroup& group = groups_[g];
  const int index = node - group_first_node_[g];
  if (index + 1 < group.nodes) return group.devices_per_node;
  return *group.devices - (group.nodes - 1) * group.devices_per_node;
}

int Cluster::node_of(int rank) const {
  const auto g = static_cast<size_t>(group_of(rank));
  return group_first_node_[g] + (rank - group_first_rank_[g]) / groups_[g].devices_per_node;
}

const Link& Cluster::link(int a, int b) const {
  const int group_a = group_of(a);
  const int group_b = group_of(b);
  if (group_a != group_b) return *between_groups_;
  const DeviceGroup& group = groups_[static_cast<size_t>(group_a)];
  return node_of(a) == node_of(b) ? group.intra_node : group.inter_node;
}

bool Cluster::operator==(const Cluster& other) const {
  if (name_ != other.name_ || groups_.size() != other.groups_.size() || size_ != other.size_) return false;
  if (between_groups_ != other.between_groups_) return false;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const DeviceGroup& a = groups_[g];
    const DeviceGroup& b = other.groups_[g];
    const bool same_memory = a.memory.has_value() == b.memory.has_value() &&
                             (!a.memory || a.memory->value() == b.memory->value());
    if (a.device != b.device || a.nodes != b.nodes || a.devices_per_node != b.devices_per_node ||
        a.devices != b.devices || a.intra_node != b.intra_node || a.inter_node != b.inter_node || !same_memory) {
      return false;
    }
  }
  return true;
}

std::optional<double> stated_power_cap(const Cluster& cluster) {
  const std::optional<double> first = cluster.groups().front().power_cap_w;
  for (const DeviceGroup& group : cluster.groups()) {
    if (group.power_cap_w != first) {
      throw UserError(fmt::format("cluster '{}': its groups state different power caps ({} and {} W); burst runs a "
                                  "step under one cap for all devices",
                                  cluster.name(), first.value_or(0), group.power_cap_w.value_or(0)));
    }
  }
  return first;
}

}  // namespace burst::cluster
