// The network model against numbers derived by hand (derivations in the comments).
// Units: GB = 1e9 bytes; A100 built-in: NVLink 300 GB/s, 5 us; InfiniBand 200 Gb/s =
// 25 GB/s, 10 us.
#include <gtest/gtest.h>

#include "burst/cluster/cluster.h"
#include "burst/cost/network.h"
#include "burst/cost/reshard.h"
#include "burst/util/error.h"

namespace burst::cost {
namespace {

using cluster::builtin_cluster;
using cluster::Link;

constexpr double kTolerance = 1e-9;  // seconds; the expectations are exact to ~1e-15

std::vector<int> ranks_from(int first, int count) {
  std::vector<int> ranks;
  for (int i = 0; i < count; ++i) ranks.push_back(first + i);
  return ranks;
}

TEST(NetworkModel, RingAllreduceFormula) {
  // 8 devices, 1 GB, 300 GB/s, 5 us:
  //   2 * 7/8 * 1e9 / 3e11 = 1.75 / 300 s = 5.8333... ms, plus 2 * 7 * 5 us = 70 us
  //   = 5.90333... ms.
  const Seconds time = NetworkModel::ring_allreduce_time(8, Bytes(1e9), Bandwidth::gigabytes_per_s(300),
                                                         Seconds::from_us(5));
  EXPECT_NEAR(time.ms(), 1.75 / 300 * 1e3 + 0.070, kTolerance);
  EXPECT_NEAR(time.ms(), 5.903333333333333, kTolerance);
  // Reduce-scatter is half of it; one device needs no messages.
  EXPECT_NEAR(NetworkModel::ring_reduce_scatter_time(8, Bytes(1e9), Bandwidth::gigabytes_per_s(300),
                                                     Seconds::from_us(5)).ms(),
              5.903333333333333 / 2, kTolerance);
  EXPECT_EQ(NetworkModel::ring_allreduce_time(1, Bytes(1e9), Bandwidth(1), Seconds(1)), Seconds(0));
}

TEST(NetworkModel, GroupWithinOneNodeUsesTheIntraNodeLink) {
  // Ranks 0-7 and 8-15 each fill one node of a 2 x 8 A100 cluster: the same 5.9033 ms ring
  // as above, and no hierarchical alternative.
  const NetworkModel model(builtin_cluster("a100", 16));
  for (const int first : {0, 8}) {
    const AllreduceEstimate estimate = model.allreduce_estimate(ranks_from(first, 8), Bytes(1e9));
    EXPECT_NEAR(estimate.ring.ms(), 5.903333333333333, kTolerance);
    EXPECT_FALSE(estimate.hierarchical.has_value());
    EXPECT_STREQ(estimate.best_algorithm(), "ring");
  }
  // Two ranks on one node: 2 * 1/2 * 1e9 / 3e11 = 3.3333 ms + 2 * 5 us.
  EXPECT_NEAR(model.allreduce({3, 6}, Bytes(1e9)).ms(), 1e3 / 300 + 0.010, kTolerance);
  EXPECT_EQ(model.allreduce({5}, Bytes(1e9)), Seconds(0));
}

TEST(NetworkModel, HierarchicalOnTwoNodesOfEight) {
  // All 16 ranks of 2 x 8 A100, S = 1 GB.
  // Hierarchical:
  //   intra reduce-scatter: 7/8 * 1e9 / 3e11 = 2.91667 ms + 7 * 5 us = 2.95167 ms; the
  //   all-gather costs the same: 5.90333 ms together;
  //   inter ring all-reduce of S/8 = 125 MB between 2 nodes:
  //   2 * 1/2 * 1.25e8 / 2.5e10 = 5 ms + 2 * 10 us = 5.02 ms;
  //   total 10.92333 ms.
  // Flat ring over 16, paced by its inter-node hops:
  //   2 * 15/16 * 1e9 / 2.5e10 = 75 ms + 30 * 10 us = 75.3 ms
  //   (its intra-node hops alone would take 6.25 ms + 30 * 5 us = 6.4 ms).
  const cluster::Cluster cluster = builtin_cluster("a100", 16);
  const NetworkModel model(cluster);
  const AllreduceEstimate estimate = model.allreduce_estimate(ranks_from(0, 16), Bytes(1e9));
  ASSERT_TRUE(estimate.hierarchical.has_value());
  EXPECT_NEAR(estimate.hierarchical->ms(), 10.923333333333333, kTolerance);
  EXPECT_NEAR(estimate.ring.ms(), 75.3, kTolerance);
  EXPECT_STREQ(estimate.best_algorithm(), "hierarchical");
  EXPECT_NEAR(model.allreduce(ranks_from(0, 16), Bytes(1e9)).ms(), 10.923333333333333, kTolerance);
  // The static formula gives the same number.
  EXPECT_NEAR(NetworkModel::hierarchical_allreduce_time(2, 8, Bytes(1e9), cluster.intra_node(),
                                                        cluster.inter_node()).ms(),
              10.923333333333333, kTolerance);
}

TEST(NetworkModel, ReduceScatterAndAllGatherAreHalfAnAllReduce) {
  // One node of 8 A100s (300 GB/s, 5 us), S = 1 GB: a ring reduce-scatter sends 7 steps of
  // S/8: 7/8 x 1e9 / 3e11 = 2.916667 ms + 7 x 5 us = 2.951667 ms; the all-gather the same.
  const NetworkModel model(builtin_cluster("a100", 16));
  EXPECT_NEAR(model.reduce_scatter(ranks_from(0, 8), Bytes(1e9)).ms(), 2.9516666666666667, kTolerance);
  EXPECT_NEAR(model.all_gather(ranks_from(0, 8), Bytes(1e9)).ms(), 2.9516666666666667, kTolerance);
  // Across the two nodes, hierarchically: intra reduce-scatter 2.951667 ms, then the
  // inter-node ring's reduce-scatter of S/8 between 2 nodes: 1/2 x 1.25e8 / 2.5e10 = 2.5 ms
  // + 10 us: 5.461667 ms, half of HierarchicalOnTwoNodesOfEight's 10.923333 ms.
  EXPECT_NEAR(model.reduce_scatter(ranks_from(0, 16), Bytes(1e9)).ms(), 5.4616666666666667, kTolerance);
  EXPECT_EQ(model.reduce_scatter({5}, Bytes(1e9)), Seconds(0));
}

TEST(NetworkModel, OneRankPerNodeBothAlgorithmsAgree) {
  // Ranks 0 and 8 on different nodes: the flat ring is all inter-node hops,
  //   2 * 1/2 * 1e9 / 2.5e10 = 40 ms + 2 * 10 us = 40.02 ms,
  // and the hierarchical one has nothing to do within a node: the same 40.02 ms. A tie
  // goes to the ring.
  const NetworkModel model(builtin_cluster("a100", 16));
  const AllreduceEstimate estimate = model.allreduce_estimate({0, 8}, Bytes(1e9));
  EXPECT_NEAR(estimate.ring.ms(), 40.02, kTolerance);
  EXPECT_NEAR(estimate.hierarchical->ms(), 40.02, kTolerance);
  EXPECT_STREQ(estimate.best_algorithm(), "ring");
}

TEST(NetworkModel, UnevenGroupAcrossNodes) {
  // Ranks 0-7 (node 0) and 8 (node 1), S = 1 GB, A100 defaults.
  // Hierarchical: intra phases for 8 ranks 5.90333 ms; inter ring carries S / 1 (node 1
  //   has a single rank): 2 * 1/2 * 1e9 / 2.5e10 = 40 ms + 20 us; total 45.92333 ms.
  // Flat ring over 9: 2 * 8/9 * 40 ms = 71.1111 ms + 16 * 10 us = 71.27111 ms.
  const NetworkModel model(builtin_cluster("a100", 16));
  const AllreduceEstimate estimate = model.allreduce_estimate(ranks_from(0, 9), Bytes(1e9));
  EXPECT_NEAR(estimate.hierarchical->ms(), 45.923333333333333, kTolerance);
  EXPECT_NEAR(estimate.ring.ms(), 2.0 * 8 / 9 * 40 + 0.160, kTolerance);
  EXPECT_STREQ(estimate.best_algorithm(), "hierarchical");
}

TEST(NetworkModel, FlatRingWinsWhenNodesAreNoFasterInside) {
  // Both links 1 GB/s, no latency; ranks 0-7 on node 0 and rank 8 on node 1; S = 9 GB.
  // Flat ring over 9: 2 * 8/9 * 9 s = 16 s.
  // Hierarchical: 2 * 7/8 * 9 s = 15.75 s within node 0, then 2 * 1/2 * 9 s = 9 s between
  // the nodes: 24.75 s. The flat ring is chosen.
  cluster::ClusterSpec spec;
  spec.name = "flat";
  spec.device = "cpu";
  spec.nodes = 2;
  spec.devices_per_node = 8;
  spec.intra_node = Link{Bandwidth::gigabytes_per_s(1), Seconds(0)};
  spec.inter_node = spec.intra_node;
  const NetworkModel model{cluster::Cluster(spec)};
  const AllreduceEstimate estimate = model.allreduce_estimate(ranks_from(0, 9), Bytes(9e9));
  EXPECT_NEAR(estimate.ring.s(), 16, kTolerance);
  EXPECT_NEAR(estimate.hierarchical->s(), 24.75, kTolerance);
  EXPECT_STREQ(estimate.best_algorithm(), "ring");
  EXPECT_NEAR(model.allreduce(ranks_from(0, 9), Bytes(9e9)).s(), 16, kTolerance);
}

TEST(NetworkModel, PointToPoint) {
  const NetworkModel model(builtin_cluster("a100", 16));
  // Same node: 5 us + 3e8 / 3e11 = 5 us + 1 ms.
  EXPECT_NEAR(model.point_to_point(0, 1, Bytes(3e8)).ms(), 1.005, kTolerance);
  // Across nodes: 10 us + 2.5e7 / 2.5e10 = 10 us + 1 ms.
  EXPECT_NEAR(model.point_to_point(7, 8, Bytes(2.5e7)).ms(), 1.010, kTolerance);
  // An empty message still pays the latency; a rank does not message itself.
  EXPECT_NEAR(model.point_to_point(0, 9, Bytes(0)).us(), 10, kTolerance);
  EXPECT_EQ(model.point_to_point(3, 3, Bytes(1e9)), Seconds(0));
}

TEST(NetworkModel, ReshardFourRanksOntoOne) {
  // One node of 8 A100s, 30 MB per sample. Ranks 0-3 hold 4 samples each; rank 0 then
  // takes all 16. Ranks 1-3 each send 4 x 30 MB = 120 MB: 5 us + 1.2e8 / 3e11 = 405 us.
  // Rank 0 receives the three one after another: 1215 us; its own piece is free.
  const NetworkModel model(builtin_cluster("a100", 8));
  const std::vector<Shard> four{{0, {0, 4}}, {1, {4, 8}}, {2, {8, 12}}, {3, {12, 16}}};
  EXPECT_NEAR(model.reshard(reshard_transfers(four, {{0, {0, 16}}}), Bytes(3e7)).us(), 1215,
              kTolerance * 1e6);
  // Onto rank 5, which held nothing: four receives, 1620 us.
  EXPECT_NEAR(model.reshard(reshard_transfers(four, {{5, {0, 16}}}), Bytes(3e7)).us(), 1620,
              kTolerance * 1e6);
  // Back from rank 0 to four ranks (the gradient): rank 0 sends three, 1215 us.
  EXPECT_NEAR(model.reshard(reshard_transfers({{0, {0, 16}}}, four), Bytes(3e7)).us(), 1215,
              kTolerance * 1e6);
  // Nothing moves when the placement stays.
  EXPECT_EQ(model.reshard(reshard_transfers(four, four), Bytes(3e7)), Seconds(0));
  EXPECT_EQ(model.reshard({}, Bytes(3e7)), Seconds(0));
}

TEST(NetworkModel, ReshardAcrossNodesIsPacedByTheBusiestRank) {
  // 2 x 8 A100, 1 MB per sample. Source ranks 0, 1, 2 hold 5/5/6 samples; destination
  // ranks 0 and 8 hold 8/8. Pieces (see reshard_test):
  //   0 -> 0 [0,5)   local, free
  //   1 -> 0 [5,8)   3 MB intra: 5 us + 3e6 / 3e11 = 15 us
  //   1 -> 8 [8,10)  2 MB inter: 10 us + 2e6 / 2.5e10 = 90 us
  //   2 -> 8 [10,16) 6 MB inter: 10 us + 6e6 / 2.5e10 = 250 us
  // Sends: rank 1 15 + 90 = 105 us, rank 2 250 us. Receives: rank 0 15 us, rank 8
  // 90 + 250 = 340 us. The busiest rank is 8: 340 us.
  const NetworkModel model(builtin_cluster("a100", 16));
  const std::vector<Transfer> transfers =
      reshard_transfers({{0, {0, 5}}, {1, {5, 10}}, {2, {10, 16}}}, {{0, {0, 8}}, {8, {8, 16}}});
  EXPECT_NEAR(model.reshard(transfers, Bytes(1e6)).us(), 340, kTolerance * 1e6);
}

TEST(NetworkModel, BadGroupsAndRanksAreUserErrors) {
  const NetworkModel model(builtin_cluster("a100", 16));
  EXPECT_THROW(model.allreduce({}, Bytes(1)), UserError);
  EXPECT_THROW(model.allreduce({16}, Bytes(1)), UserError);
  EXPECT_THROW(model.point_to_point(-1, 0, Bytes(1)), UserError);
  EXPECT_THROW(model.reshard({{0, 99, {0, 1}}}, Bytes(1)), UserError);
  try {
    model.allreduce({1, 2, 1}, Bytes(1));
    FAIL();
  } catch (const UserError& error) {
    EXPECT_EQ(std::string(error.what()), "all-reduce group lists rank 1 twice");
  }
}

}  // namespace
}  // namespace burst::cost
