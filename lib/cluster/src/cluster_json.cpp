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

}  // namespace

nlohmann::json cluster_to_json(const Cluster& cluster) {
  json document{{"format", kClusterFormat},
                {"version", kClusterFormatVersion},
                {"name", cluster.name()},
                {"device", cluster.device()},
                {"nodes", cluster.nodes()},
                {"devices_per_node", cluster.devices_per_node()}};
  if (cluster.spec().devices) document["devices"] = *cluster.spec().devices;
  const Link& intra = cluster.intra_node();
  const Link& inter = cluster.inter_node();
  document["intra_node"] = {{kGbyteKey, tidy(intra.bandwidth.bytes_per_second() / 1e9)},
                            {kLatencyKey, tidy(intra.latency.us())}};
  document["inter_node"] = {{kGbitKey, tidy(inter.bandwidth.bytes_per_second() * 8 / 1e9)},
                            {kLatencyKey, tidy(inter.latency.us())}};
  return document;
}

Cluster cluster_from_json(const nlohmann::json& document) {
  JsonObjectReader reader(document, "cluster file");
  // Order of checks: a file of another format says so first, then misspelt keys (which
  // would otherwise show up as a missing field), then each field.
  check_format(reader, kClusterFormat, kClusterFormatVersion);
  for (const char* key : {"name", "device", "nodes", "devices_per_node", "devices", "intra_node",
                          "inter_node"}) {
    reader.find(key);
  }
  reader.reject_unknown_keys();
  ClusterSpec spec;
  spec.name = reader.get_string("name");
  spec.device = reader.get_string("device");
  spec.nodes = read_count(reader, "nodes", reader.require("nodes"));
  spec.devices_per_node = read_count(reader, "devices_per_node", reader.require("devices_per_node"));
  if (const json* devices = reader.find("devices")) spec.devices = read_count(reader, "devices", *devices);
  spec.intra_node = read_link(reader.require("intra_node"), "intra_node");
  spec.inter_node = read_link(reader.require("inter_node"), "inter_node");
  try {
    return Cluster(std::move(spec));
  } catch (const UserError& error) {
    throw UserError(fmt::format("cluster file: {}", error.what()));
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
