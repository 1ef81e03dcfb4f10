// Cluster: rank -> node mapping, partly filled last nodes, links, validation.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "burst/cluster/cluster.h"
#include "burst/util/error.h"

namespace burst::cluster {
namespace {

const Link kNvlink{Bandwidth::gigabytes_per_s(300), Seconds::from_us(5)};
const Link kInfiniband{Bandwidth::gigabits_per_s(200), Seconds::from_us(10)};

ClusterSpec spec(int nodes, int per_node, std::optional<int> devices = std::nullopt) {
  ClusterSpec result;
  result.name = "test";
  result.device = "a100";
  result.nodes = nodes;
  result.devices_per_node = per_node;
  result.devices = devices;
  result.intra_node = kNvlink;
  result.inter_node = kInfiniband;
  return result;
}

std::string error_of(const ClusterSpec& bad) {
  try {
    Cluster cluster(bad);
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(Cluster, FullNodes) {
  const Cluster cluster(spec(2, 8));
  EXPECT_EQ(cluster.size(), 16);
  EXPECT_EQ(cluster.nodes(), 2);
  EXPECT_EQ(cluster.devices_on_node(0), 8);
  EXPECT_EQ(cluster.devices_on_node(1), 8);
  EXPECT_EQ(cluster.node_of(0), 0);
  EXPECT_EQ(cluster.node_of(7), 0);
  EXPECT_EQ(cluster.node_of(8), 1);
  EXPECT_EQ(cluster.node_of(15), 1);
  EXPECT_TRUE(cluster.same_node(3, 7));
  EXPECT_FALSE(cluster.same_node(7, 8));
  EXPECT_EQ(cluster.link(0, 7), kNvlink);
  EXPECT_EQ(cluster.link(3, 3), kNvlink);
  EXPECT_EQ(cluster.link(7, 8), kInfiniband);
  EXPECT_EQ(cluster.link(15, 0), kInfiniband);
  EXPECT_EQ(*cluster.groups().front().devices, cluster.size());
}

TEST(Cluster, PartlyFilledLastNode) {
  // 12 devices in nodes of 8: ranks 0-7 on node 0, ranks 8-11 on node 1.
  const Cluster cluster(spec(2, 8, 12));
  EXPECT_EQ(cluster.size(), 12);
  EXPECT_EQ(cluster.devices_on_node(0), 8);
  EXPECT_EQ(cluster.devices_on_node(1), 4);
  EXPECT_EQ(cluster.node_of(11), 1);
  EXPECT_THROW(cluster.node_of(12), UserError);
  // A full last node given explicitly is the same cluster as the default.
  EXPECT_EQ(Cluster(spec(2, 8, 16)), Cluster(spec(2, 8)));
  EXPECT_EQ(cluster_to_json(Cluster(spec(2, 8, 16))).count("devices"), 0u);
}

TEST(Cluster, RanksOutsideTheClusterAreRefused) {
  const Cluster cluster(spec(1, 4));
  EXPECT_THROW(cluster.node_of(-1), UserError);
  EXPECT_THROW(cluster.link(0, 4), UserError);
  EXPECT_THROW(cluster.devices_on_node(1), UserError);
  try {
    cluster.node_of(4);
  } catch (const UserError& error) {
    EXPECT_EQ(std::string(error.what()), "rank 4 is outside cluster 'test' of 4 devices");
  }
}

TEST(Cluster, ValidationNamesTheField) {
  EXPECT_EQ(error_of(spec(0, 8)), "cluster 'test': nodes must be between 1 and 1000000, got 0");
  EXPECT_EQ(error_of(spec(2, -1)),
            "cluster 'test': devices_per_node must be between 1 and 1000000, got -1");
  EXPECT_EQ(error_of(spec(1000, 1001)),
            "cluster 'test': 1000 nodes x 1001 devices per node is more than 1000000 devices");
  // 8 devices on 2 nodes of 8 would leave node 1 empty.
  EXPECT_EQ(error_of(spec(2, 8, 8)),
            "cluster 'test': devices must be between 9 and 16 for 2 nodes of 8 (only the last "
            "node may be partly filled), got 8");
  EXPECT_NE(error_of(spec(2, 8, 17)).find("got 17"), std::string::npos);

  ClusterSpec bad = spec(1, 8);
  bad.intra_node.bandwidth = Bandwidth(0);
  EXPECT_EQ(error_of(bad), "cluster 'test': intra_node bandwidth must be positive and at most "
                           "1e+15 bytes/s, got 0");
  bad = spec(1, 8);
  bad.inter_node.latency = Seconds::from_us(-1);
  EXPECT_EQ(error_of(bad), "cluster 'test': inter_node latency must be between 0 and 1 s, got "
                           "-1e-06 s");
  bad = spec(1, 8);
  bad.device = "A100";
  EXPECT_EQ(error_of(bad),
            "cluster 'test': device kind 'A100' may hold only a-z, 0-9, '.', '_' and '-'");
  bad = spec(1, 8);
  bad.name = "";
  EXPECT_EQ(error_of(bad), "cluster '': name must be 1 to 128 bytes long");
  bad = spec(1, 8);
  bad.name = "a\nb";
  EXPECT_EQ(error_of(bad), "cluster 'a\nb': name contains a control character");
}

TEST(Cluster, ZeroLatencyIsAllowed) {
  ClusterSpec ideal = spec(1, 2);
  ideal.intra_node.latency = Seconds(0);
  EXPECT_EQ(Cluster(ideal).intra_node().latency, Seconds(0));
}

}  // namespace
}  // namespace burst::cluster
