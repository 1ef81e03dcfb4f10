#pragma once
// Series-parallel decomposition of a model graph, for the burst planner.
//
// Nodes are the graph's layers plus two virtual terminals: a source feeding every layer
// without inputs and a sink fed by every layer without consumers (Inception's two losses,
// for example). A segment is the part of the graph strictly between two terminals u and v:
//  - Edge: no layers between, just the edges u -> v;
//  - Series: cut layers c1..ck that every u -> v path passes through, splitting the segment
//    into k + 1 consecutive segments;
//  - Parallel: no cut layer; the layers between fall into two or more weakly connected
//    branches (each a segment from u to v of its own), possibly beside direct edges u -> v;
//  - Opaque: no cut layer and only one branch, so not series-parallel (a "bridge"); the
//    planner gives all its layers one device count.
#include <cstdint>
#include <vector>

#include "burst/graph/graph.h"

namespace burst::planner::detail {

// Node ids: layers are 0..L-1 (graph ids), the source is L, the sink L + 1.
struct SpGraph {
  explicit SpGraph(const graph::Graph& graph);

  int32_t source() const { return layers; }
  int32_t sink() const { return layers + 1; }
  bool is_layer(int32_t node) const { return node < layers; }
  // Topological position: source 0, layer id + 1, sink L + 1.
  int32_t position(int32_t node) const { return node == source() ? 0 : node == sink() ? layers + 1 : node + 1; }

  int32_t layers = 0;
  std::vector<std::vector<int32_t>> consumers;  // by node, ascending
  std::vector<std::vector<int32_t>> producers;  // by node, ascending
};

enum class SegmentKind { Edge, Series, Parallel, Opaque };

struct Segment {
  SegmentKind kind = SegmentKind::Edge;
  int32_t entry = 0;  // u
  int32_t exit = 0;   // v
  // Series: the cut layers in order; children[i] runs from (i == 0 ? entry : cuts[i-1]) to
  // (i == cuts.size() ? exit : cuts[i]).
  std::vector<int32_t> cuts;
  // Series: cuts.size() + 1 pieces; Parallel: the branches (segments entry -> exit).
  std::vector<Segment> children;
  bool direct_edge = false;       // Parallel: edges entry -> exit exist beside the branches
  std::vector<int32_t> interior;  // all layers strictly inside, ascending (every kind)
};

// Decomposes the whole graph: the segment from the source to the sink.
Segment decompose(const SpGraph& graph);

}  // namespace burst::planner::detail
