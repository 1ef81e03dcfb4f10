#include "sp_decomposition.h"

#include <algorithm>
#include <numeric>

#include "burst/util/error.h"

namespace burst::planner::detail {

SpGraph::SpGraph(const graph::Graph& graph) : layers(static_cast<int32_t>(graph.size())) {
  consumers.resize(static_cast<size_t>(layers) + 2);
  producers.resize(static_cast<size_t>(layers) + 2);
  auto connect = [&](int32_t from, int32_t to) {
    consumers[static_cast<size_t>(from)].push_back(to);
    producers[static_cast<size_t>(to)].push_back(from);
  };
  for (int32_t id = 0; id < layers; ++id) {
    if (graph.inputs(id).empty()) connect(source(), id);
    // A layer may read one producer twice (add(x, x)); one edge is enough here.
    std::vector<int32_t> inputs(graph.inputs(id).begin(), graph.inputs(id).end());
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    for (const int32_t producer : inputs) connect(producer, id);
  }
  for (int32_t id = 0; id < layers; ++id) {
    if (graph.consumers(id).empty()) connect(id, sink());
  }
  for (auto& list : consumers) std::sort(list.begin(), list.end());
}

namespace {

class Decomposer {
 public:
  explicit Decomposer(const SpGraph& graph)
      : graph_(graph), member_(static_cast<size_t>(graph.layers) + 2, 0) {}

  // The segment between u and v with the given interior (ascending). `with_direct`: the
  // edges u -> v belong to this segment (false for one branch of a parallel segment).
  // Long: the recursion's three cases (a chain, parallel branches,
  // an irreducible region) build the one segment they return and recurse into its parts.
  Segment decompose(int32_t u, int32_t v, std::vector<int32_t> interior, bool with_direct) {
    Segment segment;
    segment.entry = u;
    segment.exit = v;
    segment.interior = std::move(interior);
    if (segment.interior.empty()) {
      segment.kind = SegmentKind::Edge;
      return segment;
    }
    const int stamp = ++stamp_;
    for (const int32_t node : segment.interior) member_[static_cast<size_t>(node)] = stamp;

    // A layer is a cut when no edge of the segment jumps over it (topological positions).
    auto reach_of = [&](int32_t node) {
      int32_t reach = 0;
      for (const int32_t consumer : graph_.consumers[static_cast<size_t>(node)]) {
        const bool inside = member_[static_cast<size_t>(consumer)] == stamp ||
                            (consumer == v && (node != u || with_direct));
        if (inside) reach = std::max(reach, graph_.position(consumer));
      }
      return reach;
    };
    int32_t reach = reach_of(u);
    for (const int32_t node : segment.interior) {
      if (reach <= graph_.position(node)) segment.cuts.push_back(node);
      reach = std::max(reach, reach_of(node));
    }

    if (!segment.cuts.empty()) {
      segment.kind = SegmentKind::Series;
      size_t next = 0;  // index into interior
      int32_t from = u;
      for (size_t i = 0; i <= segment.cuts.size(); ++i) {
        const int32_t to = i < segment.cuts.size() ? segment.cuts[i] : v;
        std::vector<int32_t> piece;
        while (next < segment.interior.size() && segment.interior[next] != to) {
          piece.push_back(segment.interior[next++]);
        }
        ++next;  // skip the cut itself
        segment.children.push_back(decompose(from, to, std::move(piece), true));
        from = to;
      }
      return segment;
    }

    // No cut: branches are the weakly connected parts of the interior.
    std::vector<int32_t> part(segment.interior.size());
    std::iota(part.begin(), part.end(), 0);
    std::vector<int32_t> index_of(static_cast<size_t>(graph_.layers) + 2, -1);
    for (size_t i = 0; i < segment.interior.size(); ++i) {
      index_of[static_cast<size_t>(segment.interior[i])] = static_cast<int32_t>(i);
    }
    auto find = [&](int32_t i) {
      while (part[static_cast<size_t>(i)] != i) {
        part[static_cast<size_t>(i)] = part[static_cast<size_t>(part[static_cast<size_t>(i)])];
        i = part[static_cast<size_t>(i)];
      }
      return i;
    };
    for (size_t i = 0; i < segment.interior.size(); ++i) {
      for (const int32_t consumer : graph_.consumers[static_cast<size_t>(segment.interior[i])]) {
        if (member_[static_cast<size_t>(consumer)] != stamp) continue;
        const int32_t a = find(static_cast<int32_t>(i));
        const int32_t b = find(index_of[static_cast<size_t>(consumer)]);
        part[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
      }
    }
    std::vector<std::vector<int32_t>> branches;
    std::vector<int32_t> branch_of(segment.interior.size(), -1);
    for (size_t i = 0; i < segment.interior.size(); ++i) {
      const auto root = static_cast<size_t>(find(static_cast<int32_t>(i)));
      if (branch_of[root] < 0) {
        branch_of[root] = static_cast<int32_t>(branches.size());
        branches.emplace_back();
      }
      branches[static_cast<size_t>(branch_of[root])].push_back(segment.interior[i]);
    }
    const auto& u_consumers = graph_.consumers[static_cast<size_t>(u)];
    segment.direct_edge =
        with_direct && std::binary_search(u_consumers.begin(), u_consumers.end(), v);
    if (branches.size() + (segment.direct_edge ? 1 : 0) < 2) {
      segment.kind = SegmentKind::Opaque;
      return segment;
    }
    segment.kind = SegmentKind::Parallel;
    for (auto& branch : branches) segment.children.push_back(decompose(u, v, std::move(branch), false));
    return segment;
  }

 private:
  const SpGraph& graph_;
  std::vector<int> member_;  // stamp of the decomposition call whose interior holds the node
  int stamp_ = 0;
};

}  // namespace

Segment decompose(const SpGraph& graph) {
  std::vector<int32_t> all(static_cast<size_t>(graph.layers));
  std::iota(all.begin(), all.end(), 0);
  return Decomposer(graph).decompose(graph.source(), graph.sink(), std::move(all), true);
}

}  // namespace burst::planner::detail
