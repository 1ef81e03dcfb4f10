// Cluster files: the documented example, round trips, units, and one-line errors.
#include <cstdio>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "burst/cluster/cluster.h"
#include "burst/util/error.h"
#include "load_error.h"

namespace burst::cluster {
namespace {

using nlohmann::json;
using testing::load_error;

// The example of docs/cluster-format.md, field for field.
const char* const kExample = R"({
  "format": "burst.cluster", "version": 1, "name": "lab-2x8-a100", "device": "a100",
  "nodes": 2, "devices_per_node": 8,
  "intra_node": {"bandwidth_gbyte_s": 300, "latency_us": 5},
  "inter_node": {"bandwidth_gbit_s": 200, "latency_us": 10}})";


// kExample with `field` replaced by `value` (or removed when value is null).
std::string example_with(const std::string& field, const json& value) {
  json document = json::parse(kExample);
  if (value.is_null()) {
    document.erase(field);
  } else {
    document[field] = value;
  }
  return document.dump();
}

TEST(ClusterJson, ReadsTheExample) {
  const Cluster cluster = cluster_from_text(kExample);
  EXPECT_EQ(cluster.name(), "lab-2x8-a100");
  EXPECT_EQ(cluster.device(), "a100");
  EXPECT_EQ(cluster.size(), 16);
  // 300 GB/s = 3e11 bytes/s; 200 Gb/s = 200e9 / 8 = 2.5e10 bytes/s.
  EXPECT_DOUBLE_EQ(cluster.intra_node().bandwidth.bytes_per_second(), 3e11);
  EXPECT_DOUBLE_EQ(cluster.inter_node().bandwidth.bytes_per_second(), 2.5e10);
  EXPECT_DOUBLE_EQ(cluster.intra_node().latency.us(), 5);
  EXPECT_DOUBLE_EQ(cluster.inter_node().latency.us(), 10);
}

TEST(ClusterJson, TheDocumentedExampleFileLoads) {
  const Cluster cluster = load_cluster_file(BURST_EXAMPLES_DIR "/cluster-2x8-a100.json");
  EXPECT_EQ(cluster, cluster_from_text(kExample));
}

TEST(ClusterJson, EitherBandwidthUnit) {
  // 2400 Gb/s is 300 GB/s; 25 GB/s is 200 Gb/s.
  json document = json::parse(kExample);
  document["intra_node"] = {{"bandwidth_gbit_s", 2400}, {"latency_us", 5}};
  document["inter_node"] = {{"bandwidth_gbyte_s", 25}, {"latency_us", 10}};
  EXPECT_EQ(cluster_from_json(document), cluster_from_text(kExample));
}

TEST(ClusterJson, CanonicalFormAndRoundTrip) {
  const Cluster cluster = cluster_from_text(kExample);
  const json written = cluster_to_json(cluster);
  EXPECT_EQ(written, json::parse(kExample));  // the example is already canonical
  EXPECT_EQ(cluster_from_json(written), cluster);

  // Awkward numbers survive the unit conversions; a partly filled node keeps "devices".
  json odd = json::parse(kExample);
  odd["devices"] = 13;
  odd["intra_node"] = {{"bandwidth_gbyte_s", 123.456789}, {"latency_us", 0.7}};
  odd["inter_node"] = {{"bandwidth_gbit_s", 99.9}, {"latency_us", 3.3}};
  const Cluster partial = cluster_from_json(odd);
  EXPECT_EQ(cluster_to_json(partial), odd);
  EXPECT_EQ(cluster_from_json(cluster_to_json(partial)), partial);
}

TEST(ClusterJson, FileRoundTrip) {
  const Cluster cluster = builtin_cluster("h100-sxm", 20);
  const std::string path = ::testing::TempDir() + "/burst_cluster_json_test.json";
  save_cluster_file(cluster, path);
  EXPECT_EQ(load_cluster_file(path), cluster);
  std::remove(path.c_str());
}

TEST(ClusterJson, ErrorsNameTheField) {
  EXPECT_EQ(load_error(example_with("nodes", 0)),
            "cluster file: field 'nodes' must be between 1 and 1000000, got 0");
  EXPECT_EQ(load_error(example_with("devices_per_node", 2000000)),
            "cluster file: field 'devices_per_node' must be between 1 and 1000000, got 2000000");
  EXPECT_EQ(load_error(example_with("nodes", "2")),
            "cluster file: field 'nodes' must be an integer, got \"2\"");
  EXPECT_EQ(load_error(example_with("nodes", 2.5)),
            "cluster file: field 'nodes' must be an integer, got 2.5");
  EXPECT_EQ(load_error(example_with("nodes", 200000)),
            "cluster file: cluster 'lab-2x8-a100': 200000 nodes x 8 devices per node is more than "
            "1000000 devices");
  EXPECT_EQ(load_error(example_with("devices", 5)),
            "cluster file: cluster 'lab-2x8-a100': devices must be between 9 and 16 for 2 nodes "
            "of 8 (only the last node may be partly filled), got 5");
  EXPECT_EQ(load_error(example_with("device", nullptr)), "cluster file: field 'device' is missing");
  EXPECT_EQ(load_error(example_with("inter_node", nullptr)),
            "cluster file: field 'inter_node' is missing");
  EXPECT_EQ(load_error(example_with("nodes_count", 2)),
            "cluster file: unknown field 'nodes_count' (accepted: device, devices, "
            "devices_per_node, format, inter_node, intra_node, name, nodes, version)");
  EXPECT_EQ(load_error(example_with("version", 3)),
            "cluster file: format version 3 is not supported (this burst reads versions 1 to 2)");
  EXPECT_EQ(load_error(example_with("format", "burst.model")),
            "cluster file: format is \"burst.model\", expected \"burst.cluster\"");
  EXPECT_EQ(load_error("[]"), "cluster file: must be a JSON object, got []");
  EXPECT_EQ(load_error(example_with("intra_node", 300)),
            "cluster file: intra_node: must be a JSON object, got 300");
}

TEST(ClusterJson, LinkErrorsNameTheLinkAndField) {
  const auto with_link = [](const json& link) { return example_with("inter_node", link); };
  EXPECT_EQ(load_error(with_link({{"bandwidth_gbit_s", 0}, {"latency_us", 10}})),
            "cluster file: inter_node: field 'bandwidth_gbit_s' must be positive and at most "
            "8000000, got 0");
  EXPECT_EQ(load_error(with_link({{"bandwidth_gbyte_s", -25}, {"latency_us", 10}})),
            "cluster file: inter_node: field 'bandwidth_gbyte_s' must be positive and at most "
            "1000000, got -25");
  EXPECT_EQ(load_error(with_link({{"bandwidth_gbit_s", 200}, {"latency_us", -1}})),
            "cluster file: inter_node: field 'latency_us' must be between 0 and 1000000 "
            "(microseconds), got -1");
  EXPECT_EQ(load_error(with_link({{"bandwidth_gbit_s", 200}})),
            "cluster file: inter_node: field 'latency_us' is missing");
  EXPECT_EQ(load_error(with_link({{"latency_us", 10}})),
            "cluster file: inter_node: give the bandwidth as exactly one of 'bandwidth_gbyte_s' "
            "(GB/s) or 'bandwidth_gbit_s' (Gb/s), found neither");
  EXPECT_EQ(load_error(with_link({{"bandwidth_gbit_s", 200}, {"bandwidth_gbyte_s", 25},
                                  {"latency_us", 10}})),
            "cluster file: inter_node: give the bandwidth as exactly one of 'bandwidth_gbyte_s' "
            "(GB/s) or 'bandwidth_gbit_s' (Gb/s), found both");
  // A misspelt key is reported as unknown, not as a missing bandwidth.
  EXPECT_EQ(load_error(with_link({{"bandwidth_gbps", 200}, {"latency_us", 10}})),
            "cluster file: inter_node: unknown field 'bandwidth_gbps' (accepted: "
            "bandwidth_gbit_s, bandwidth_gbyte_s, latency_us)");
  EXPECT_EQ(load_error(with_link({{"bandwidth_gbit_s", 200}, {"latency_us", 10}, {"mtu", 4096}})),
            "cluster file: inter_node: unknown field 'mtu' (accepted: bandwidth_gbit_s, "
            "bandwidth_gbyte_s, latency_us)");
  EXPECT_EQ(load_error(with_link({{"bandwidth_gbit_s", "200 Gb/s"}, {"latency_us", 10}})),
            "cluster file: inter_node: field 'bandwidth_gbit_s' must be a number, got \"200 "
            "Gb/s\"");
}

TEST(ClusterJson, BadTextAndPaths) {
  EXPECT_EQ(load_error(std::string(100, '[') + std::string(100, ']')),
            "JSON nesting deeper than 64 levels");
  EXPECT_EQ(load_error(R"({"format": )").rfind("invalid JSON: parse error at line 1", 0), 0u);
  try {
    load_cluster_file("missing/cluster.json");
    FAIL();
  } catch (const UserError& error) {
    EXPECT_EQ(std::string(error.what()),
              "cannot open cluster file 'missing/cluster.json': No such file or directory");
  }
}

}  // namespace
}  // namespace burst::cluster
