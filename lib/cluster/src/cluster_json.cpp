// Cluster files: strict reading (every field checked and named in errors) and writing.
#include <cstdlib>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/cluster/cluster.h"
#include "burst/util/error.h"
#include "burst/util/json_io.h"

namespace burst::cluster {
namespace {

using nlohmann::json;

constexpr const char* kGbyteKey = "bandwidth_gbyte_s";  // 10^9 bytes per second
constexpr const char* kGbitKey = "bandwidth_gbit_s";    // 10^9 bits per second
constexpr const char* kLatencyKey = "latency_us";

// `value` rounded to 12 significant digits, so unit conversions written to a file read
// back as the number a person typed (300, not 299.99999999999994).
double tidy(double value) { return std::strtod(fmt::format("{:.12g}", value).c_str(), nullptr); }

int read_count(JsonObjectReader& reader, const std::string& key, const json& value) {
  const int64_t count = reader.as_int(key, value);
  if (count < 1 || count > kMaxDevices) {
    reader.fail(key, fmt::format("must be between 1 and {}, got {}", kMaxDevices, count));
  }
  return static_cast<int>(count);
}

// {"bandwidth_gbyte_s" | "bandwidth_gbit_s": number > 0, "latency_us": number >= 0}
Link read_link(const json& value, const std::string& key) {
  JsonObjectReader reader(value, "cluster file: " + key);
  const json* gbyte = reader.find(kGbyteKey);
  const json* gbit = reader.find(kGbitKey);
  const json* latency_value = reader.find(kLatencyKey);
  reader.reject_unknown_keys();  // a misspelt key says so, rather than "missing"
  if ((gbyte == nullptr) == (gbit == nullptr)) {
    throw UserError(fmt::format("{}: give the bandwidth as exactly one of '{}' (GB/s) or '{}' "
                                "(Gb/s), found {}", reader.where(), kGbyteKey, kGbitKey,
                                gbyte == nullptr ? "neither" : "both"));
  }
  const char* bandwidth_key = gbyte != nullptr ? kGbyteKey : kGbitKey;
  const double number = reader.as_number(bandwidth_key, gbyte != nullptr ? *gbyte : *gbit);
  const double max_number = gbyte != nullptr ? kMaxBandwidthBytesPerSecond / 1e9
                                             : kMaxBandwidthBytesPerSecond * 8 / 1e9;
  if (!(number > 0) || number > max_number) {
    reader.fail(bandwidth_key, fmt::format("must be positive and at most {}, got {}", max_number,
                                           json_excerpt(gbyte != nullptr ? *gbyte : *gbit)));
  }
  if (latency_value == nullptr) reader.fail(kLatencyKey, "is missing");
  const double latency_us = reader.as_number(kLatencyKey, *latency_value);
  if (!(latency_us >= 0) || latency_us > kMaxLatencySeconds * 1e6) {
    reader.fail(kLatencyKey, fmt::format("must be between 0 and {} (microseconds), got {}",
                                         kMaxLatencySeconds * 1e6, json_excerpt(*latency_value)));
  }
  return Link{gbyte != nullptr ? Bandwidth::gigabytes_per_s(number) : Bandwidth::gigabits_per_s(number),
              Seconds::from_us(latency_us)};
}

json link_json(const Link& link, bool in_gbit) {
  const double bytes_per_second = link.bandwidth.bytes_per_second();
  return {{in_gbit ? kGbitKey : kGbyteKey, tidy(in_gbit ? bytes_per_second * 8 / 1e9 : bytes_per_second / 1e9)},
          {kLatencyKey, tidy(link.latency.us())}};
}

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

// A group's fields (a version-1 document's, without format, version and name).
json group_json(const DeviceGroup& group) {
  json document{{"device", group.device}, {"nodes", group.nodes}, {"devices_per_node", group.devices_per_node}};
  if (*group.devices < group.nodes * group.devices_per_node) document["devices"] = *group.devices;
  document["intra_node"] = link_json(group.intra_node, false);
  document["inter_node"] = link_json(group.inter_node, true);
  if (group.memory) document["memory_gib"] = tidy(group.memory->value() / kGib);
  if (group.power_cap_w) document["power_cap_w"] = *group.power_cap_w;
  return document;
}

constexpr const char* kGroupKeys[] = {"device", "nodes", "devices_per_node", "devices", "intra_node", "inter_node"};

// Reads a group's fields from `reader` (whose other keys the caller has looked up).
DeviceGroup read_group(JsonObjectReader& reader, const std::string& prefix) {
  DeviceGroup group;
  group.device = reader.get_string("device");
  group.nodes = read_count(reader, "nodes", reader.require("nodes"));
  group.devices_per_node = read_count(reader, "devices_per_node", reader.require("devices_per_node"));
  if (const json* devices = reader.find("devices")) group.devices = read_count(reader, "devices", *devices);
  group.intra_node = read_link(reader.require("intra_node"), prefix + "intra_node");
  group.inter_node = read_link(reader.require("inter_node"), prefix + "inter_node");
  if (const json* memory = reader.find("memory_gib")) {
    const double gib = reader.as_number("memory_gib", *memory);
    if (!(gib > 0) || gib > 1e6) reader.fail("memory_gib", fmt::format("must be positive and at most 1e6, got {}", json_excerpt(*memory)));
    group.memory = Bytes(gib * kGib);
  }
  if (const json* cap = reader.find("power_cap_w")) {
    const double watts = reader.as_number("power_cap_w", *cap);
    if (!(watts > 0) || watts > 1e5) reader.fail("power_cap_w", fmt::format("must be positive watts, got {}", json_excerpt(*cap)));
    group.power_cap_w = watts;
  }
  return group;
}

Cluster cluster_from_groups(JsonObjectReader& reader) {
  for (const char* key : {"name", "groups", "between_groups"}) reader.find(key);
  reader.reject_unknown_keys();
  MixedClusterSpec spec;
  spec.name = reader.get_string("name");
  const json& groups = reader.require("groups");
  if (!groups.is_array() || groups.empty()) reader.fail("groups", "must be a non-empty list of groups");
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string prefix = fmt::format("groups[{}].", g);
    JsonObjectReader group_reader(groups[g], "cluster file: " + prefix.substr(0, prefix.size() - 1));
    for (const char* key : kGroupKeys) group_reader.find(key);
    group_reader.find("memory_gib");
    group_reader.find("power_cap_w");
    group_reader.reject_unknown_keys();
    spec.groups.push_back(read_group(group_reader, prefix));
  }
  if (const json* link = reader.find("between_groups")) spec.between_groups = read_link(*link, "between_groups");
  return Cluster(std::move(spec));
}

Cluster cluster_from_one_kind(JsonObjectReader& reader) {
  reader.find("name");
  for (const char* key : kGroupKeys) reader.find(key);
  reader.reject_unknown_keys();
  DeviceGroup group = read_group(reader, "");
  return Cluster(ClusterSpec{reader.get_string("name"), std::move(group.device), group.nodes, group.devices_per_node,
                             group.devices, group.intra_node, group.inter_node});
}

}  // namespace

nlohmann::json cluster_to_json(const Cluster& cluster) {
  const bool one_kind = !cluster.mixed() && !cluster.groups().front().memory && !cluster.groups().front().power_cap_w;
  json document{{"format", kClusterFormat}, {"version", one_kind ? 1 : 2}, {"name", cluster.name()}};
  if (one_kind) {
    document.update(group_json(cluster.groups().front()));
    return document;
  }
  document["groups"] = json::array();
  for (const DeviceGroup& group : cluster.groups()) document["groups"].push_back(group_json(group));
  if (cluster.between_groups()) document["between_groups"] = link_json(*cluster.between_groups(), true);
  return document;
}

Cluster cluster_from_json(const nlohmann::json& document) {
  JsonObjectReader reader(document, "cluster file");
  // Order of checks: a file of another format says so first, then misspelt keys (which
  // would otherwise show up as a missing field), then each field.
  const int64_t version = check_format(reader, kClusterFormat, 1, kClusterFormatVersion);
  try {
    return version == 1 ? cluster_from_one_kind(reader) : cluster_from_groups(reader);
  } catch (const UserError& error) {
    const std::string message = error.what();
    if (message.rfind("cluster file", 0) == 0) throw;
    throw UserError(fmt::format("cluster file: {}", message));
  }
}

Cluster cluster_from_text(const std::string& text) { return cluster_from_json(parse_json_text(text)); }

Cluster load_cluster_file(const std::string& path) {
  const std::string text = read_text_file(path, "cluster file");
  try {
    return cluster_from_text(text);
  } catch (const UserError& error) {
    throw UserError(fmt::format("{}: {}", path, error.what()));
  }
}

void save_cluster_file(const Cluster& cluster, const std::string& path) {
  write_text_file_atomically(path, cluster_to_json(cluster).dump(2) + "\n");
}

}  // namespace burst::cluster
