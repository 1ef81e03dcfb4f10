// Built-in clusters: shapes and the documented defaults (docs/cluster-format.md).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "burst/cluster/cluster.h"
#include "burst/util/error.h"

namespace burst::cluster {
namespace {

TEST(BuiltinCluster, GpuKindsUseNodesOfEight) {
  const Cluster a100 = builtin_cluster("a100", 16);
  EXPECT_EQ(a100.name(), "a100x16");
  EXPECT_EQ(a100.device(), "a100");
  EXPECT_EQ(a100.nodes(), 2);
  EXPECT_EQ(a100.devices_per_node(), 8);
  EXPECT_EQ(a100.size(), 16);

  // 12 devices: one full node and one node of 4.
  const Cluster twelve = builtin_cluster("h100-sxm", 12);
  EXPECT_EQ(twelve.nodes(), 2);
  EXPECT_EQ(twelve.size(), 12);
  EXPECT_EQ(twelve.devices_on_node(1), 4);

  // Fewer than 8 devices: one partly filled node.
  const Cluster three = builtin_cluster("v100", 3);
  EXPECT_EQ(three.nodes(), 1);
  EXPECT_EQ(three.devices_per_node(), 8);
  EXPECT_EQ(three.size(), 3);
}

TEST(BuiltinCluster, DocumentedLinkDefaults) {
  struct Expected {
    const char* kind;
    double nvlink_gbyte_s;
    double nic_gbit_s;
  };
  // NVLink per direction: V100 6 x 25, A100 12 x 25, H100/H200 18 x 25 GB/s.
  // NIC per GPU: HDR 200 Gb/s (V100/A100), NDR 400 Gb/s (H100/H200).
  for (const Expected& expected : {Expected{"v100", 150, 200}, Expected{"a100", 300, 200},
                                   Expected{"a100-80gb", 300, 200}, Expected{"h100-sxm", 450, 400},
                                   Expected{"h200", 450, 400}}) {
    SCOPED_TRACE(expected.kind);
    const Cluster cluster = builtin_cluster(expected.kind, 16);
    EXPECT_DOUBLE_EQ(cluster.intra_node().bandwidth.bytes_per_second(), expected.nvlink_gbyte_s * 1e9);
    EXPECT_DOUBLE_EQ(cluster.inter_node().bandwidth.bytes_per_second(), expected.nic_gbit_s * 1e9 / 8);
    EXPECT_DOUBLE_EQ(cluster.intra_node().latency.us(), 5);
    EXPECT_DOUBLE_EQ(cluster.inter_node().latency.us(), 10);
  }
}

TEST(BuiltinCluster, CpuIsOneNodeOfProcesses) {
  const Cluster cpu = builtin_cluster("cpu", 12);
  EXPECT_EQ(cpu.nodes(), 1);
  EXPECT_EQ(cpu.devices_per_node(), 12);
  EXPECT_EQ(cpu.size(), 12);
  EXPECT_TRUE(cpu.same_node(0, 11));
  // Shared memory / loopback: 5 GB/s, 20 us.
  EXPECT_DOUBLE_EQ(cpu.intra_node().bandwidth.bytes_per_second(), 5e9);
  EXPECT_DOUBLE_EQ(cpu.intra_node().latency.us(), 20);
}

TEST(BuiltinCluster, EveryKindRoundTripsThroughJson) {
  for (const std::string& kind : builtin_device_kinds()) {
    SCOPED_TRACE(kind);
    for (const int64_t devices : {1, 7, 8, 9, 64}) {
      const Cluster cluster = builtin_cluster(kind, devices);
      EXPECT_EQ(cluster.size(), devices);
      EXPECT_EQ(cluster_from_json(cluster_to_json(cluster)), cluster);
    }
  }
}

TEST(BuiltinCluster, BadArgumentsAreUserErrors) {
  try {
    builtin_cluster("tpu", 8);
    FAIL();
  } catch (const UserError& error) {
    EXPECT_EQ(std::string(error.what()),
              "unknown device kind 'tpu' (built-in kinds: v100, a100, a100-80gb, h100-sxm, h200, "
              "b200, gb200, cpu; for other machines write a cluster file, see docs/cluster-format.md)");
  }
  try {
    builtin_cluster("a100", 0);
    FAIL();
  } catch (const UserError& error) {
    EXPECT_EQ(std::string(error.what()), "devices must be between 1 and 1000000, got 0");
  }
  EXPECT_THROW(builtin_cluster("a100", -8), UserError);
  EXPECT_THROW(builtin_cluster("a100", 1'000'001), UserError);
  EXPECT_EQ(builtin_cluster("a100", 1'000'000).nodes(), 125'000);
}

}  // namespace
}  // namespace burst::cluster
