#include "burst/cost/network.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <utility>
#include <unordered_set>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::cost {
namespace {

void check_size(Bytes size) {
  BURST_ASSERT(std::isfinite(size.value()) && size.value() >= 0,
               fmt::format("message size must be finite and >= 0, got {}", size.value()));
}

Seconds message_time(const cluster::Link& link, Bytes size) {
  return link.latency + size / link.bandwidth;
}

// The slower of two links in each respect: the lower bandwidth, the higher latency.
cluster::Link slowest(const cluster::Link& a, const cluster::Link& b) {
  return cluster::Link{Bandwidth(std::min(a.bandwidth.bytes_per_second(), b.bandwidth.bytes_per_second())),
                       std::max(a.latency, b.latency)};
}

// The links a group of ranks all-reduces over: within a node, the slowest intra-node link of
// the groups it touches; between nodes, the slowest inter-node link, and the link between
// groups when it spans groups (a ring's or a hierarchy's step waits for its slowest hop).
std::pair<cluster::Link, cluster::Link> group_links(const cluster::Cluster& cluster, const std::vector<int>& ranks) {
  if (!cluster.mixed()) return {cluster.intra_node(), cluster.inter_node()};
  std::vector<char> touched(cluster.groups().size(), 0);
  for (const int rank : ranks) touched[static_cast<size_t>(cluster.group_of(rank))] = 1;
  std::optional<cluster::Link> intra, inter;
  int groups = 0;
  for (size_t g = 0; g < touched.size(); ++g) {
    if (touched[g] == 0) continue;
    ++groups;
    const cluster::DeviceGroup& group = cluster.groups()[g];
    intra = intra ? slowest(*intra, group.intra_node) : group.intra_node;
    inter = inter ? slowest(*inter, group.inter_node) : group.inter_node;
  }
  if (groups > 1) inter = slowest(*inter, *cluster.between_groups());
  return {*intra, *inter};
}

}  // namespace

Seconds NetworkModel::ring_reduce_scatter_time(int n, Bytes size, Bandwidth bandwidth, Seconds latency) {
  BURST_ASSERT(n >= 1, fmt::format("a ring needs at least one device, got {}", n));
  check_size(size);
  const double steps = n - 1;
  return (size / bandwidth) * (steps / n) + latency * steps;
}

Seconds NetworkModel::ring_allreduce_time(int n, Bytes size, Bandwidth bandwidth, Seconds latency) {
  return ring_reduce_scatter_time(n, size, bandwidth, latency) * 2;
}

Seconds NetworkModel::hierarchical_allreduce_time(int nodes, int devices_per_node, Bytes size,
                                                  const cluster::Link& intra_node,
                                                  const cluster::Link& inter_node) {
  BURST_ASSERT(nodes >= 1 && devices_per_node >= 1,
               fmt::format("hierarchical all-reduce over {} nodes of {}", nodes, devices_per_node));
  const Seconds intra_phase = ring_reduce_scatter_time(devices_per_node, size, intra_node.bandwidth,
                                                       intra_node.latency);
  return intra_phase * 2 + ring_allreduce_time(nodes, size / devices_per_node,
                                               inter_node.bandwidth, inter_node.latency);
}

Seconds NetworkModel::point_to_point(int src, int dst, Bytes size) const {
  check_size(size);
  const cluster::Link& link = cluster_.link(src, dst);  // checks both ranks
  return src == dst ? Seconds(0) : message_time(link, size);
}

Seconds NetworkModel::all_to_all(const std::vector<int>& ranks, Bytes size) const {
  const double n = static_cast<double>(ranks.size());
  double busiest = 0;
  for (const int from : ranks) {
    double sending = 0;
    for (const int to : ranks) {
      if (to != from) sending += point_to_point(from, to, Bytes(size.value() / n)).s();
    }
    busiest = std::max(busiest, sending);
  }
  return Seconds(busiest);
}

Seconds NetworkModel::reduce_scatter(const std::vector<int>& ranks, Bytes size) const {
  return allreduce(ranks, size) / 2;
}

Seconds NetworkModel::allreduce(const std::vector<int>& ranks, Bytes size) const {
  return allreduce_estimate(ranks, size).best();
}

AllreduceEstimate NetworkModel::allreduce_estimate(const std::vector<int>& ranks, Bytes size) const {
  check_size(size);
  if (ranks.empty()) throw UserError("all-reduce over an empty group of ranks");
  std::unordered_set<int> seen;
  std::map<int, int> ranks_on_node;  // node -> how many of the group's ranks it holds
  for (const int rank : ranks) {
    const int node = cluster_.node_of(rank);  // checks the rank
    if (!seen.insert(rank).second) {
      throw UserError(fmt::format("all-reduce group lists rank {} twice", rank));
    }
    ++ranks_on_node[node];
  }
  const int n = static_cast<int>(ranks.size());
  const auto [intra, inter] = group_links(cluster_, ranks);
  if (ranks_on_node.size() == 1) {
    return AllreduceEstimate{ring_allreduce_time(n, size, intra.bandwidth, intra.latency), std::nullopt};
  }

  const int nodes = static_cast<int>(ranks_on_node.size());
  // Flat ring: `nodes` inter-node hops, and n - nodes intra-node hops; a step lasts as long
  // as its slowest hop.
  Seconds ring = ring_allreduce_time(n, size, inter.bandwidth, inter.latency);
  if (n > nodes) ring = std::max(ring, ring_allreduce_time(n, size, intra.bandwidth, intra.latency));

  int fewest = n;
  int most = 0;
  for (const auto& [node, count] : ranks_on_node) {
    fewest = std::min(fewest, count);
    most = std::max(most, count);
  }
  // Equal shares: exactly hierarchical_allreduce_time. Unequal: intra phases for the node
  // with the most ranks, the inter-node ring for the biggest piece (S / fewest).
  const Seconds hierarchical =
      ring_reduce_scatter_time(most, size, intra.bandwidth, intra.latency) * 2 +
      ring_allreduce_time(nodes, size / fewest, inter.bandwidth, inter.latency);
  return AllreduceEstimate{ring, hierarchical};
}

Seconds NetworkModel::reshard(const std::vector<Transfer>& transfers, Bytes bytes_per_sample) const {
  check_size(bytes_per_sample);
  std::map<int, Seconds> sending;    // rank -> total time of its sends
  std::map<int, Seconds> receiving;  // rank -> total time of its receives
  Seconds busiest(0);
  for (const Transfer& transfer : transfers) {
    const cluster::Link& link = cluster_.link(transfer.src_rank, transfer.dst_rank);
    BURST_ASSERT(transfer.samples.size() >= 0, "a transfer with a negative sample count");
    if (transfer.local() || transfer.samples.size() == 0) continue;
    const Seconds time =
        message_time(link, bytes_per_sample * static_cast<double>(transfer.samples.size()));
    busiest = std::max({busiest, sending[transfer.src_rank] += time,
                        receiving[transfer.dst_rank] += time});
  }
  return busiest;
}

}  // namespace burst::cost
