#pragma once
// The network model: how long point-to-point messages, all-reduces and re-shards take on
// a cluster (formulas in docs/cluster-format.md, "The network model").
//
// Every message of S bytes over a link costs alpha + S / B (latency alpha, bandwidth B per
// direction; the alpha-beta or Hockney model). Assumptions, all deliberate simplifications:
//  - links are full duplex: a device sends and receives at full bandwidth at the same time;
//  - a device sends its messages one after another and receives one after another;
//    different devices' messages do not slow each other down (NVSwitch, a non-blocking
//    fat tree, one NIC per device), except as stated for the inter-node bandwidth
//    (docs: it is each device's share when all devices communicate at once);
//  - reductions cost no compute time (they are bandwidth-bound), and there is no overlap
//    with computation here: the simulator decides what overlaps;
//  - collectives use rings, the algorithm NCCL and Gloo use for large messages; short
//    messages, where trees or other algorithms win, are modelled pessimistically.
#include <optional>
#include <vector>

#include "burst/cluster/cluster.h"
#include "burst/cost/reshard.h"
#include "burst/util/units.h"

namespace burst::cost {

// Predicted all-reduce time of one group, per algorithm.
struct AllreduceEstimate {
  Seconds ring;                         // flat ring over all ranks of the group
  std::optional<Seconds> hierarchical;  // only for groups that span nodes
  // The faster of the two (the one a communicator would pick).
  Seconds best() const { return hierarchical && *hierarchical < ring ? *hierarchical : ring; }
  // "ring" or "hierarchical", naming best().
  const char* best_algorithm() const { return hierarchical && *hierarchical < ring ? "hierarchical" : "ring"; }
};

class NetworkModel {
 public:
  // Keeps its own copy of the cluster.
  explicit NetworkModel(cluster::Cluster cluster) : cluster_(std::move(cluster)) {}

  const cluster::Cluster& cluster() const { return cluster_; }

  // One message of `size` bytes from src to dst: latency + size / bandwidth of the link
  // between them; 0 when src == dst (no message). Throws UserError for a rank outside
  // the cluster.
  Seconds point_to_point(int src, int dst, Bytes size) const;

  // All-reduce of `size` bytes (each rank's full buffer, e.g. a layer's weight gradients)
  // among `ranks`: allreduce_estimate(ranks, size).best(). 0 for a single rank.
  Seconds allreduce(const std::vector<int>& ranks, Bytes size) const;

  // Reduce-scatter of `size` bytes (each rank's full buffer; each ends with its 1/n share
  // reduced) among `ranks`, and all-gather of the n shares of a `size`-byte buffer: each is
  // exactly half of the all-reduce of `size` bytes under either algorithm (a ring
  // all-reduce is a ring reduce-scatter then a ring all-gather; the hierarchical one's
  // reduce-scatter is the intra-node reduce-scatter and the inter-node ring's reduce-scatter
  // half), so both are allreduce(ranks, size) / 2: the ring's (n-1)/n x S/B + (n-1) x alpha.
  // 0 for a single rank.
  Seconds reduce_scatter(const std::vector<int>& ranks, Bytes size) const;
  Seconds all_gather(const std::vector<int>& ranks, Bytes size) const { return reduce_scatter(ranks, size); }
  // All-to-all of `size` bytes a rank among `ranks` (each sends size / n to every other):
  // each rank sends its n - 1 pieces one after another (as reshard's transfers: latency +
  // bytes / bandwidth of the link to each peer) while it receives its own; done when the
  // busiest rank is. 0 for a single rank.
  Seconds all_to_all(const std::vector<int>& ranks, Bytes size) const;

  // Both algorithms for one group. Within one node: a ring over the intra-node link.
  // Across nodes:
  //  - flat ring: each of its 2(n-1) steps sends S/n bytes over every hop at once, so a
  //    step lasts as long as its slowest hop; a ring that visits each node's ranks in a
  //    row has one inter-node hop per node and intra-node hops when a node holds more
  //    than one rank. Time = max over the hop kinds present of ring_allreduce_time;
  //  - hierarchical: hierarchical_allreduce_time with k nodes. When the nodes hold
  //    different numbers of the group's ranks (g_min..g_max), the intra-node phases are
  //    priced for g_max ranks and the inter-node ring for the largest piece, S / g_min: an
  //    approximation that is exact when every node holds the same number.
  // Throws UserError for an empty group, a repeated rank or a rank outside the cluster.
  AllreduceEstimate allreduce_estimate(const std::vector<int>& ranks, Bytes size) const;

  // Time of one re-shard moving bytes_per_sample for every sample of every transfer. A
  // transfer costs latency + bytes / bandwidth on the link between its ranks; each rank
  // sends its transfers one after another and, at the same time, receives its own one
  // after another; local transfers cost nothing. The re-shard is done when the busiest
  // rank is: max over ranks of max(total send time, total receive time). 0 when nothing
  // crosses ranks. Throws UserError for a rank outside the cluster.
  Seconds reshard(const std::vector<Transfer>& transfers, Bytes bytes_per_sample) const;

  // ---- formulas (n devices, S bytes, bandwidth B, latency alpha) -----------------------

  // Ring reduce-scatter (and, with the same cost, all-gather): n - 1 steps, each sending
  // S/n bytes: (n-1)/n * S/B + (n-1) * alpha. 0 for n == 1.
  static Seconds ring_reduce_scatter_time(int n, Bytes size, Bandwidth bandwidth, Seconds latency);

  // Ring all-reduce = reduce-scatter + all-gather: 2(n-1)/n * S/B + 2(n-1) * alpha.
  static Seconds ring_allreduce_time(int n, Bytes size, Bandwidth bandwidth, Seconds latency);

  // Hierarchical all-reduce over `nodes` nodes of g = devices_per_node devices each:
  // ring reduce-scatter of S within each node (each device then holds S/g reduced over its
  // node), a ring all-reduce of those S/g bytes among the nodes (the g devices of a node
  // each run their own inter-node ring, in parallel, on their own share of the NICs), and
  // a ring all-gather within each node:
  //   2 * [(g-1)/g * S/B_intra + (g-1) * alpha_intra]
  //     + 2(nodes-1)/nodes * (S/g)/B_inter + 2(nodes-1) * alpha_inter.
  static Seconds hierarchical_allreduce_time(int nodes, int devices_per_node, Bytes size,
                                             const cluster::Link& intra_node,
                                             const cluster::Link& inter_node);

 private:
  cluster::Cluster cluster_;
};

}  // namespace burst::cost
