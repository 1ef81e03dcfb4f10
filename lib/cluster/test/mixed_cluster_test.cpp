// Mixed clusters: groups of device kinds, their ranks, nodes and links, version-2 files and
// `--devices a100:8,v100:8` lists.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "burst/cluster/cluster.h"
#include "burst/util/error.h"
#include "load_error.h"

namespace burst::cluster {
namespace {

namespace mixed {

const Link kNvlink{Bandwidth::gigabytes_per_s(300), Seconds::from_us(5)};
const Link kSlowNvlink{Bandwidth::gigabytes_per_s(150), Seconds::from_us(5)};
const Link kInfiniband{Bandwidth::gigabits_per_s(200), Seconds::from_us(10)};
const Link kEthernet{Bandwidth::gigabits_per_s(100), Seconds::from_us(20)};

DeviceGroup group(const char* kind, int nodes, int per_node, const Link& intra, std::optional<int> devices = {}) {
  return DeviceGroup{kind, nodes, per_node, devices, intra, kInfiniband, std::nullopt, std::nullopt};
}

// 12 A100s (nodes of 8: 8 + 4), then 8 V100s in nodes of 4.
Cluster example() {
  return Cluster(MixedClusterSpec{"lab", {group("a100", 2, 8, kNvlink, 12), group("v100", 2, 4, kSlowNvlink)}, kEthernet});
}

std::string error_of(MixedClusterSpec spec) {
  try {
    Cluster cluster(std::move(spec));
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}


}  // namespace mixed

TEST(MixedCluster, RanksNodesKindsAndLinks) {
  const Cluster cluster = mixed::example();
  EXPECT_TRUE(cluster.mixed());
  EXPECT_EQ(cluster.size(), 20);
  EXPECT_EQ(cluster.nodes(), 4);
  EXPECT_EQ(cluster.kinds(), (std::vector<std::string>{"a100", "v100"}));
  // Ranks 0-7 node 0, 8-11 node 1 (the A100 group's partly filled last node), then the
  // V100 group's nodes 2 (ranks 12-15) and 3 (16-19).
  EXPECT_EQ(cluster.node_of(7), 0);
  EXPECT_EQ(cluster.node_of(11), 1);
  EXPECT_EQ(cluster.node_of(12), 2);
  EXPECT_EQ(cluster.node_of(19), 3);
  EXPECT_EQ(cluster.devices_on_node(1), 4);
  EXPECT_EQ(cluster.devices_on_node(2), 4);
  EXPECT_EQ(cluster.kind_of(11), "a100");
  EXPECT_EQ(cluster.kind_of(12), "v100");
  EXPECT_EQ(cluster.kind_index(19), 1);
  EXPECT_EQ(cluster.ranks_of_kind(1), (std::vector<int>{12, 13, 14, 15, 16, 17, 18, 19}));
  EXPECT_EQ(cluster.link(0, 7), mixed::kNvlink);
  EXPECT_EQ(cluster.link(7, 8), mixed::kInfiniband);
  EXPECT_EQ(cluster.link(12, 15), mixed::kSlowNvlink);
  EXPECT_EQ(cluster.link(15, 16), mixed::kInfiniband);
  EXPECT_EQ(cluster.link(11, 12), mixed::kEthernet);
  EXPECT_THROW(cluster.kind_of(20), UserError);
}

TEST(MixedCluster, FirstRanksCutTheGroups) {
  const Cluster cluster = mixed::example();
  const Cluster first = cluster.first_ranks(14);
  EXPECT_EQ(first.size(), 14);
  EXPECT_EQ(first.kinds(), cluster.kinds());
  EXPECT_EQ(first.ranks_of_kind(1), (std::vector<int>{12, 13}));
  EXPECT_EQ(first.link(11, 12), mixed::kEthernet);
  const Cluster a100s = cluster.first_ranks(6);
  EXPECT_FALSE(a100s.mixed());
  EXPECT_EQ(a100s.size(), 6);
}

TEST(MixedCluster, FilesOfVersionTwoRoundTrip) {
  Cluster cluster = mixed::example();
  MixedClusterSpec spec{"with-memory", cluster.groups(), cluster.between_groups()};
  spec.groups[1].memory = Bytes(32.0 * 1024 * 1024 * 1024);
  const Cluster with_memory(spec);
  for (const Cluster& original : {cluster, with_memory}) {
    const nlohmann::json document = cluster_to_json(original);
    EXPECT_EQ(document.at("version"), 2);
    EXPECT_EQ(cluster_from_json(document), original);
  }
  EXPECT_EQ(cluster_to_json(with_memory).at("groups").at(1).at("memory_gib"), 32);
  // One group without a memory is written as version 1, which reads back the same.
  const Cluster one_kind = builtin_cluster("a100", 8);
  EXPECT_EQ(cluster_to_json(one_kind).at("version"), 1);
}

TEST(MixedCluster, BadGroupsAreOneLine) {
  using mixed::error_of;
  EXPECT_EQ(error_of(MixedClusterSpec{"x", {}, mixed::kEthernet}), "cluster 'x': a cluster needs at least one group");
  EXPECT_EQ(error_of(MixedClusterSpec{"x", {mixed::group("a100", 1, 8, mixed::kNvlink), mixed::group("v100", 1, 8, mixed::kNvlink)}, std::nullopt}),
            "cluster 'x': 2 groups need a between_groups link");
  EXPECT_EQ(error_of(MixedClusterSpec{"x", {mixed::group("a100", 1, 8, mixed::kNvlink), mixed::group("v100", 0, 8, mixed::kNvlink)}, mixed::kEthernet}),
            "cluster 'x': group 1 (v100): nodes must be between 1 and 1000000, got 0");
  EXPECT_EQ(error_of(MixedClusterSpec{"x", {mixed::group("A100", 1, 8, mixed::kNvlink)}, std::nullopt}),
            "cluster 'x': group 0 (A100): device kind 'A100' may hold only a-z, 0-9, '.', '_' and '-'");
  const std::string file = R"({"format": "burst.cluster", "version": 2, "name": "m", "groups": [
      {"device": "a100", "nodes": 1, "devices_per_node": 8, "devices": 0,
       "intra_node": {"bandwidth_gbyte_s": 300, "latency_us": 5}, "inter_node": {"bandwidth_gbit_s": 200, "latency_us": 10}}]})";
  EXPECT_EQ(testing::load_error(file), "cluster file: groups[0]: field 'devices' must be between 1 and 1000000, got 0");
  EXPECT_EQ(testing::load_error(R"({"format": "burst.cluster", "version": 2, "name": "m", "groups": []})"),
            "cluster file: field 'groups' must be a non-empty list of groups");
}

TEST(MixedCluster, DevicesLists) {
  const Cluster cluster = builtin_mixed_cluster("a100:8,v100:8", "");
  EXPECT_EQ(cluster.name(), "a100x8+v100x8");
  EXPECT_EQ(cluster.kinds(), (std::vector<std::string>{"a100", "v100"}));
  EXPECT_EQ(cluster.size(), 16);
  EXPECT_EQ(cluster.nodes(), 2);
  // Groups meet over the slower inter-node network (both HDR here).
  EXPECT_EQ(*cluster.between_groups(), builtin_cluster("v100", 8).inter_node());
  EXPECT_EQ(builtin_mixed_cluster("12", "h100-sxm"), builtin_cluster("h100-sxm", 12));
  auto error_of = [](const std::string& list) {
    try {
      builtin_mixed_cluster(list, "a100");
    } catch (const UserError& error) {
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error_of("a100:8,x"),
            "--devices 'a100:8,x': entry 'x' is not KIND:COUNT with a count from 1 to 1000000 (for example a100:8,v100:8)");
  EXPECT_EQ(error_of("a100:0"),
            "--devices 'a100:0': entry 'a100:0' is not KIND:COUNT with a count from 1 to 1000000 (for example a100:8,v100:8)");
  EXPECT_EQ(error_of("a100:8,"),
            "--devices 'a100:8,': entry '' is not KIND:COUNT with a count from 1 to 1000000 (for example a100:8,v100:8)");
  EXPECT_NE(error_of("tpu:8").find("unknown device kind 'tpu'"), std::string::npos);
}

}  // namespace
}  // namespace burst::cluster
