#include "burst/cluster/cluster.h"

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

}  // namespace

Cluster::Cluster(ClusterSpec spec) : spec_(std::move(spec)) {
  const std::string where = fmt::format("cluster '{}'", text_excerpt(spec_.name));
  if (spec_.name.empty() || spec_.name.size() > kMaxNameLength) {
    throw UserError(fmt::format("{}: name must be 1 to {} bytes long", where, kMaxNameLength));
  }
  for (const char c : spec_.name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      throw UserError(fmt::format("{}: name contains a control character", where));
    }
  }
  if (spec_.device.empty() || spec_.device.size() > kMaxDeviceLength) {
    throw UserError(fmt::format("{}: device kind must be 1 to {} characters long", where,
                                kMaxDeviceLength));
  }
  for (const char c : spec_.device) {
    if (!is_device_char(c)) {
      throw UserError(fmt::format("{}: device kind '{}' may hold only a-z, 0-9, '.', '_' and "
                                  "'-'", where, text_excerpt(spec_.device)));
    }
  }
  if (spec_.nodes < 1 || spec_.nodes > kMaxDevices) {
    throw UserError(fmt::format("{}: nodes must be between 1 and {}, got {}", where, kMaxDevices,
                                spec_.nodes));
  }
  if (spec_.devices_per_node < 1 || spec_.devices_per_node > kMaxDevices) {
    throw UserError(fmt::format("{}: devices_per_node must be between 1 and {}, got {}", where,
                                kMaxDevices, spec_.devices_per_node));
  }
  const auto capacity = checked_mul(spec_.nodes, spec_.devices_per_node);
  if (!capacity || *capacity > kMaxDevices) {
    throw UserError(fmt::format("{}: {} nodes x {} devices per node is more than {} devices",
                                where, spec_.nodes, spec_.devices_per_node, kMaxDevices));
  }
  if (spec_.devices) {
    // At least one device on the last node, and no more devices than the nodes hold.
    const int64_t full_nodes_before_last = static_cast<int64_t>(spec_.nodes - 1) * spec_.devices_per_node;
    if (*spec_.devices <= full_nodes_before_last || *spec_.devices > *capacity) {
      throw UserError(fmt::format(
          "{}: devices must be between {} and {} for {} nodes of {} (only the last node may be "
          "partly filled), got {}",
          where, full_nodes_before_last + 1, *capacity, spec_.nodes, spec_.devices_per_node,
          *spec_.devices));
    }
    // A full last node is the default: keep one canonical form.
    if (*spec_.devices == *capacity) spec_.devices.reset();
  }
  size_ = spec_.devices ? *spec_.devices : static_cast<int>(*capacity);
  check_link(where, "intra_node", spec_.intra_node);
  check_link(where, "inter_node", spec_.inter_node);
}

int Cluster::devices_on_node(int node) const {
  if (node < 0 || node >= spec_.nodes) {
    throw UserError(fmt::format("node {} is outside cluster '{}' of {} nodes", node,
                                text_excerpt(spec_.name), spec_.nodes));
  }
  if (node + 1 < spec_.nodes) return spec_.devices_per_node;
  return size_ - (spec_.nodes - 1) * spec_.devices_per_node;
}

int Cluster::node_of(int rank) const {
  if (rank < 0 || rank >= size_) {
    throw UserError(fmt::format("rank {} is outside cluster '{}' of {} devices", rank,
                                text_excerpt(spec_.name), size_));
  }
  return rank / spec_.devices_per_node;
}

const Link& Cluster::link(int a, int b) const {
  return same_node(a, b) ? spec_.intra_node : spec_.inter_node;
}

bool Cluster::operator==(const Cluster& other) const {
  return spec_.name == other.spec_.name && spec_.device == other.spec_.device &&
         spec_.nodes == other.spec_.nodes && spec_.devices_per_node == other.spec_.devices_per_node &&
         size_ == other.size_ && spec_.intra_node == other.spec_.intra_node &&
         spec_.inter_node == other.spec_.inter_node;
}

}  // namespace burst::cluster
