// The burst planner's dynamic programming over a series-parallel decomposition
// (burst_planner.h for the contract, transform.h for the algebra, docs/planner.md for the
// walk-through).
#include "burst/planner/burst_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "burst/program/step_program.h"
#include "burst/util/error.h"
#include "burst/planner/heterogeneous.h"
#include "planner_costs.h"
#include "sp_decomposition.h"
#include "transform.h"

namespace burst::planner {

// The searches build plans from the plan library's types and rules throughout, and price
// them with the evaluator.
using namespace burst::plan;  // NOLINT(google-build-using-namespace)
using timing::evaluate_plan;
using timing::EvaluateOptions;
using timing::PlanEvaluation;
namespace detail {
namespace {

// Option sets at the top level start from the known state (0, 0): two numbers suffice and
// more options are kept, so chains are planned exactly. Inside branches the start is not
// known yet: three numbers, fewer options.
constexpr int kTopDims = 2;
constexpr int kTopCapacity = 32;
constexpr int kInnerDims = 3;
constexpr int kInnerCapacity = 4;
constexpr int32_t kConcurrent = -2;  // Option::from_option of a concurrent-branches option

// Options of one segment for every (entry count, exit count) pair.
struct Table {
  size_t exits = 0;
  std::vector<OptionSet> cells;  // [entry index * exits + exit index]
  const OptionSet& at(size_t entry, size_t exit) const { return cells[entry * exits + exit]; }
};

// Re-shard times of one edge of concurrent branches for each count of u (into a branch) or
// of v (out of it): [branch][count index], seconds.
struct EdgeTimes {
  std::vector<std::vector<double>> forward;   // activations
  std::vector<std::vector<double>> backward;  // gradients, the other way
};

// Concurrent branches: each branch's layers on one range of ranks.
struct ConcurrentLayout {
  std::vector<Placement> branches;   // by child index
  std::vector<Transform> internal;   // each branch's layers, without its edges to u and v
  std::vector<double> forward, backward;  // each branch's compute (largest shards), seconds
  // Into each branch from u and out of each branch to v. Every branch's messages share the
  // ports of u's ranks (and of v's), so they are priced together (price_edges).
  EdgeTimes in, out;
};

class Planner {
 public:
  // `costs` (kept alive by the caller) is shared by plans under different limits: its
  // tables do not depend on the limit, which is set here.
  Planner(const PlanContext& context, PlannerCosts& costs, const BurstOptions& options)
      : context_(context), options_(options), costs_(costs), sp_(context.graph) {
    costs_.set_amplification(options.amplification);
    root_ = decompose(sp_);
    choose_counts();
    placements_.assign(static_cast<size_t>(sp_.layers), Placement{0, 0});
  }

  BurstPlanResult run() {
    Seconds predicted;
    if (root_.kind == SegmentKind::Series) {
      const auto stages = series_stages(root_, 0, kTopDims, kTopCapacity);
      const OptionSet& final_options = stages.back()[0];
      BURST_ASSERT(!final_options.empty(), "no plan for the whole model");
      const auto& options = final_options.options();
      const Option& best = final_options.best();
      predicted = Seconds(best.transform.beta);
      assign_series(root_, stages, 0, static_cast<int32_t>(&best - options.data()));
    } else {
      const OptionSet& cell = table(root_).at(0, 0);
      const Option& best = cell.best();
      predicted = Seconds(best.transform.beta);
      assign(root_, 0, 0, static_cast<int32_t>(&best - cell.options().data()));
    }
    Plan plan = make_plan();
    predicted += slowest_rank_update(plan);
    return BurstPlanResult{std::move(plan), predicted};
  }

 private:
  // The optimizer step comes after a rank's backward and all-reduces; the DP's estimate ends
  // there. Under prefix placements rank 0 holds every layer and finishes last, so the
  // slowest rank's update is exactly what the step adds (concurrent branches: an estimate).
  Seconds slowest_rank_update(const Plan& plan) const {
    std::vector<Seconds> update(static_cast<size_t>(costs_.devices()), Seconds(0));
    for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(context_.graph.size()); ++id) {
      for (const cost::Shard& shard : plan.layers[static_cast<size_t>(id)].shards) {
        update[static_cast<size_t>(shard.rank)] += context_.cost_of(shard.rank).update_or_zero(context_.graph, id);
      }
    }
    return *std::max_element(update.begin(), update.end());
  }

  // ---- candidates ---------------------------------------------------------------------

  // Layers on the top-level chain get up to max_candidates counts; layers in or at the
  // ends of parallel or opaque parts get max_branch_candidates.
  void choose_counts() {
    std::vector<char> in_branch(static_cast<size_t>(sp_.layers) + 2, 0);
    mark_branches(root_, in_branch);
    const std::vector<int> main = costs_.base_counts(std::max(2, options_.max_candidates));
    const std::vector<int> branch = costs_.base_counts(std::max(2, options_.max_branch_candidates));
    counts_.resize(static_cast<size_t>(sp_.layers) + 2);
    for (int32_t node = 0; node < sp_.layers; ++node) {
      for (const int count : in_branch[static_cast<size_t>(node)] ? branch : main) {
        if (costs_.allowed(node, count)) counts_[static_cast<size_t>(node)].push_back(count);
      }
    }
    counts_[static_cast<size_t>(sp_.source())] = {1};
    counts_[static_cast<size_t>(sp_.sink())] = {1};
  }

  void mark_branches(const Segment& segment, std::vector<char>& in_branch) {
    if (segment.kind == SegmentKind::Parallel || segment.kind == SegmentKind::Opaque) {
      in_branch[static_cast<size_t>(segment.entry)] = in_branch[static_cast<size_t>(segment.exit)] = 1;
      for (const int32_t node : segment.interior) in_branch[static_cast<size_t>(node)] = 1;
    }
    for (const Segment& child : segment.children) mark_branches(child, in_branch);
  }

  const std::vector<int>& counts(int32_t node) const { return counts_[static_cast<size_t>(node)]; }

  // ---- pieces -------------------------------------------------------------------------

  Transform node_transform(int32_t node, Placement placement) {
    if (!sp_.is_layer(node)) return {};
    const LayerStep step = costs_.step(node, placement);
    return layer_transform(step.forward, step.backward, step.sync);
  }

  double edge_time(int32_t producer, Placement from, int32_t consumer, Placement to) {
    if (!sp_.is_layer(producer) || !sp_.is_layer(consumer)) return 0;
    return costs_.transfer(producer, from, to);
  }

  // No gradient goes back into a producer that takes none (the data): the step program
  // sends none.
  bool gradient_into(int32_t producer) const {
    return sp_.is_layer(producer) && program::carries_gradient(context_.graph, producer);
  }

  Transform edge(int32_t producer, int from_count, int32_t consumer, int to_count) {
    const double transfer = edge_time(producer, {0, from_count}, consumer, {0, to_count});
    return edge_transform(transfer, gradient_into(producer) ? transfer : 0);
  }

  // ---- series: dynamic programming over the cut layers, from the exit back --------------

  // stages[0] holds the exit (only `exit_index` set, to the identity); stages[j] the
  // entry of the j-th piece from the end, with that cut layer's own transform included.
  using Stage = std::vector<OptionSet>;
  std::vector<Stage> series_stages(const Segment& segment, size_t exit_index, int dims, int capacity) {
    std::vector<Stage> stages;
    stages.emplace_back(counts(segment.exit).size(), OptionSet(dims, capacity));
    stages[0][exit_index].insert(Option{});
    for (size_t k = segment.children.size(); k-- > 0;) {
      const Segment& piece = segment.children[k];
      const int32_t a = piece.entry, b = piece.exit;
      Stage next(counts(a).size(), OptionSet(dims, capacity));
      const Stage& current = stages.back();
      const Table* piece_table = piece.kind == SegmentKind::Edge ? nullptr : &table(piece);
      for (size_t ib = 0; ib < current.size(); ++ib) {
        const auto& ahead = current[ib].options();
        if (ahead.empty()) continue;
        for (size_t ia = 0; ia < counts(a).size(); ++ia) {
          auto extend = [&](const Transform& piece_transform, int32_t piece_option) {
            for (size_t o = 0; o < ahead.size(); ++o) {
              next[ia].insert(Option{then(ahead[o].transform, piece_transform), static_cast<int32_t>(ib),
                                     static_cast<int32_t>(o), piece_option});
            }
          };
          if (piece_table == nullptr) {
            extend(edge(a, counts(a)[ia], b, counts(b)[ib]), -1);
          } else {
            const auto& piece_options = piece_table->at(ia, ib).options();
            for (size_t p = 0; p < piece_options.size(); ++p) {
              extend(piece_options[p].transform, static_cast<int32_t>(p));
            }
          }
        }
      }
      if (k > 0) {  // `a` is a cut layer: add its own time
        for (size_t ia = 0; ia < next.size(); ++ia) {
          if (next[ia].empty()) continue;
          const Transform own = node_transform(a, {0, counts(a)[ia]});
          OptionSet with_layer(dims, capacity);
          for (Option option : next[ia].options()) {
            option.transform = then(option.transform, own);
            with_layer.insert(option);
          }
          next[ia] = std::move(with_layer);
        }
      }
      stages.push_back(std::move(next));
    }
    return stages;
  }

  void assign_series(const Segment& segment, const std::vector<Stage>& stages, size_t entry_index,
                     int32_t option_index) {
    size_t index = entry_index;
    for (size_t k = 0; k < segment.children.size(); ++k) {
      const Segment& piece = segment.children[k];
      const Stage& stage = stages[segment.children.size() - k];
      const Option& option = stage[index].options().at(static_cast<size_t>(option_index));
      if (k > 0) placements_[static_cast<size_t>(piece.entry)] = {0, counts(piece.entry)[index]};
      if (piece.kind != SegmentKind::Edge) {
        assign(piece, index, static_cast<size_t>(option.from_count), option.piece_option);
      }
      index = static_cast<size_t>(option.from_count);
      option_index = option.from_option;
    }
  }

  // ---- tables of inner segments ----------------------------------------------------------

  const Table& table(const Segment& segment) {
    auto found = tables_.find(&segment);
    if (found != tables_.end()) return found->second;
    Table result;
    result.exits = counts(segment.exit).size();
    const size_t entries = counts(segment.entry).size();
    result.cells.assign(entries * result.exits, OptionSet(kInnerDims, kInnerCapacity));
    for (size_t iv = 0; iv < result.exits; ++iv) {
      if (segment.kind == SegmentKind::Series) {
        const auto stages = series_stages(segment, iv, kInnerDims, kInnerCapacity);
        for (size_t iu = 0; iu < entries; ++iu) result.cells[iu * result.exits + iv] = stages.back()[iu];
        continue;
      }
      for (size_t iu = 0; iu < entries; ++iu) {
        result.cells[iu * result.exits + iv] = segment.kind == SegmentKind::Parallel
                                                   ? parallel_cell(segment, iu, iv, nullptr)
                                                   : opaque_cell(segment, iu, iv);
      }
    }
    return tables_.emplace(&segment, std::move(result)).first->second;
  }

  void assign(const Segment& segment, size_t entry_index, size_t exit_index, int32_t option_index) {
    switch (segment.kind) {
      case SegmentKind::Edge:
        return;
      case SegmentKind::Series: {
        const auto stages = series_stages(segment, exit_index, kInnerDims, kInnerCapacity);
        return assign_series(segment, stages, entry_index, option_index);
      }
      case SegmentKind::Opaque: {
        const Option& option = table(segment).at(entry_index, exit_index).options().at(static_cast<size_t>(option_index));
        for (const int32_t node : segment.interior) placements_[static_cast<size_t>(node)] = {0, option.from_count};
        return;
      }
      case SegmentKind::Parallel:
        return assign_parallel(segment, entry_index, exit_index, option_index);
    }
  }

  // ---- parallel: branches one after another, or all at once on disjoint ranks -------------

  // The branches in the order backward meets them (the one holding the latest layer first).
  std::vector<size_t> backward_order(const Segment& segment) const {
    std::vector<size_t> order(segment.children.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return segment.children[a].interior.back() > segment.children[b].interior.back();
    });
    return order;
  }

  // One cell; `stages`, when given, receives the sequential composition's steps.
  OptionSet parallel_cell(const Segment& segment, size_t iu, size_t iv, std::vector<OptionSet>* stages) {
    const int u_count = counts(segment.entry)[iu];
    const int v_count = counts(segment.exit)[iv];
    OptionSet current(kInnerDims, kInnerCapacity);
    Transform direct{};
    if (segment.direct_edge) direct = edge(segment.entry, u_count, segment.exit, v_count);
    current.insert(Option{direct});
    for (const size_t branch : backward_order(segment)) {
      if (stages != nullptr) stages->push_back(current);
      OptionSet next(kInnerDims, kInnerCapacity);
      const auto& branch_options = table(segment.children[branch]).at(iu, iv).options();
      const auto& ahead = current.options();
      for (size_t o = 0; o < ahead.size(); ++o) {
        for (size_t p = 0; p < branch_options.size(); ++p) {
          next.insert(Option{then(ahead[o].transform, branch_options[p].transform), -1, static_cast<int32_t>(o),
                             static_cast<int32_t>(p)});
        }
      }
      current = std::move(next);
    }
    const std::vector<ConcurrentLayout>& layouts = concurrent_layouts(segment);
    for (size_t index = 0; index < layouts.size(); ++index) {
      const Transform all = together(direct, concurrent_branches(layouts[index], iu, iv));
      current.insert(Option{all, static_cast<int32_t>(index), kConcurrent, -1});
    }
    return current;
  }

  void assign_parallel(const Segment& segment, size_t iu, size_t iv, int32_t option_index) {
    std::vector<OptionSet> stages;
    const OptionSet cell = parallel_cell(segment, iu, iv, &stages);
    const Option* option = &cell.options().at(static_cast<size_t>(option_index));
    if (option->from_option == kConcurrent) {
      const ConcurrentLayout& layout = concurrent_layouts(segment).at(static_cast<size_t>(option->from_count));
      for (size_t branch = 0; branch < segment.children.size(); ++branch) {
        for (const int32_t node : segment.children[branch].interior) {
          placements_[static_cast<size_t>(node)] = layout.branches[branch];
        }
      }
      return;
    }
    const std::vector<size_t> order = backward_order(segment);
    for (size_t step = order.size(); step-- > 0;) {
      assign(segment.children[order[step]], iu, iv, option->piece_option);
      option = &stages[step].options().at(static_cast<size_t>(option->from_option));
    }
  }

  // The branches run at once: v's forward waits for the slowest branch's forward (its
  // input re-shard, compute and output re-shard), u's backward for the slowest branch's
  // backward. Each branch's transform, with its re-shards from u and to v, is padded to
  // those (a forward-only wait before v, a backward-only one before u), so their slowest
  // gives the block's time.
  Transform concurrent_branches(const ConcurrentLayout& layout, size_t iu, size_t iv) const {
    const size_t branches = layout.branches.size();
    std::vector<double> forward(branches), backward(branches);
    for (size_t j = 0; j < branches; ++j) {
      forward[j] = layout.in.forward[j][iu] + layout.forward[j] + layout.out.forward[j][iv];
      backward[j] = layout.out.backward[j][iv] + layout.backward[j] + layout.in.backward[j][iu];
    }
    const double slowest_forward = *std::max_element(forward.begin(), forward.end());
    const double slowest_backward = *std::max_element(backward.begin(), backward.end());
    Transform all{};
    for (size_t j = 0; j < branches; ++j) {
      const Transform wait_before_v = layer_transform(slowest_forward - forward[j], 0, 0);
      const Transform wait_before_u = layer_transform(0, slowest_backward - backward[j], 0);
      const Transform own = then(then(edge_transform(layout.out.forward[j][iv], layout.out.backward[j][iv]),
                                      layout.internal[j]),
                                 edge_transform(layout.in.forward[j][iu], layout.in.backward[j][iu]));
      all = together(all, then(then(wait_before_v, own), wait_before_u));
    }
    return all;
  }

  // The re-shards between `end` (u or v) and the branches for every count of `end`:
  // uses[j] lists branch j's layers that read u (into: true) or feed v. Their messages share
  // the ports of `end`'s ranks, so they are priced together: out of u (and, backward, out
  // of v) all at once, when u's forward (v's backward) is done; into v (backward: into u)
  // from each branch once its compute is done, counted from the branch's start (its other
  // re-shard, which depends on the other end's count, is left out of that moment). Each
  // time is what the branch spends past its compute.
  EdgeTimes price_end(int32_t end, bool into, const ConcurrentLayout& layout,
                      const std::vector<std::vector<int32_t>>& uses) {
    const size_t branches = layout.branches.size();
    EdgeTimes times;
    times.forward.assign(branches, std::vector<double>(counts(end).size(), 0.0));
    times.backward = times.forward;
    if (!sp_.is_layer(end)) return times;  // a virtual terminal: nothing moves
    std::vector<std::pair<int32_t, size_t>> in_graph_order;  // (layer, branch)
    for (size_t j = 0; j < branches; ++j) {
      for (const int32_t node : uses[j]) in_graph_order.emplace_back(node, j);
    }
    std::sort(in_graph_order.begin(), in_graph_order.end());
    for (size_t index = 0; index < counts(end).size(); ++index) {
      const Placement at_end{0, counts(end)[index]};
      std::vector<PlannerCosts::Reshard> reshards;
      for (const auto& [node, j] : in_graph_order) {
        // Into v forward and into u backward, a branch's messages wait for its compute.
        reshards.push_back(into ? PlannerCosts::Reshard{end, at_end, layout.branches[j], 0, layout.backward[j]}
                                : PlannerCosts::Reshard{node, layout.branches[j], at_end, layout.forward[j], 0});
      }
      const PlannerCosts::SharedTimes ends = costs_.shared_transfers(reshards);
      for (size_t k = 0; k < reshards.size(); ++k) {
        const size_t j = in_graph_order[k].second;
        times.forward[j][index] = std::max(times.forward[j][index], ends.forward[k] - reshards[k].forward_ready_s);
        times.backward[j][index] = std::max(times.backward[j][index], ends.backward[k] - reshards[k].backward_ready_s);
      }
    }
    return times;
  }

  // Fills layout.in and layout.out for every count of u and v.
  void price_edges(const Segment& segment, ConcurrentLayout& layout) {
    const size_t branches = segment.children.size();
    std::vector<std::vector<int32_t>> reads_u(branches), feeds_v(branches);
    for (size_t branch = 0; branch < branches; ++branch) {
      for (const int32_t node : segment.children[branch].interior) {
        const auto& producers = sp_.producers[static_cast<size_t>(node)];
        const auto& consumers = sp_.consumers[static_cast<size_t>(node)];
        if (std::find(producers.begin(), producers.end(), segment.entry) != producers.end()) {
          reads_u[branch].push_back(node);
        }
        if (std::find(consumers.begin(), consumers.end(), segment.exit) != consumers.end()) {
          feeds_v[branch].push_back(node);
        }
      }
    }
    layout.in = price_end(segment.entry, true, layout, reads_u);
    layout.out = price_end(segment.exit, false, layout, feeds_v);
  }

  // All of a branch's layers on `placement`, one after another (edges inside cost nothing).
  Transform uniform_interior(const std::vector<int32_t>& interior, Placement placement) {
    Transform result{};
    for (size_t i = interior.size(); i-- > 0;) result = then(result, node_transform(interior[i], placement));
    return result;
  }

  bool uniform_allowed(const std::vector<int32_t>& interior, int count) {
    return std::all_of(interior.begin(), interior.end(),
                       [&](int32_t node) { return costs_.allowed(node, count); });
  }

  // Layouts for running the branches at the same time, one per device budget N, N/2,
  // N/4, ... (at least one device per branch): the transfers to and from the branches
  // decide which budget is best, so the cells weigh them all.
  const std::vector<ConcurrentLayout>& concurrent_layouts(const Segment& segment) {
    auto found = layouts_.find(&segment);
    if (found != layouts_.end()) return found->second;
    std::vector<ConcurrentLayout> layouts;
    const int branches = static_cast<int>(segment.children.size());
    if (options_.concurrent_branches && branches >= 2 && branches <= costs_.usable()) {
      for (int budget = costs_.devices(); budget >= branches; budget /= 2) {
        ConcurrentLayout layout = concurrent_layout(segment, budget);
        const bool seen = std::any_of(layouts.begin(), layouts.end(), [&](const ConcurrentLayout& other) {
          return std::equal(other.branches.begin(), other.branches.end(), layout.branches.begin(),
                            [](Placement a, Placement b) { return a.offset == b.offset && a.count == b.count; });
        });
        if (seen) continue;
        price_edges(segment, layout);
        layouts.push_back(std::move(layout));
      }
    }
    return layouts_.emplace(&segment, std::move(layouts)).first->second;
  }

  // Devices for concurrent branches within `budget`: start each at one device and give the
  // next device to the branch that is slowest so far (optimal for minimising the slowest
  // branch when a branch's best time never grows with more devices), then lay the branches
  // out from rank 0, largest first, moving a branch that fits in a node off a node boundary.
  // Long: the greedy allocation and the layout read one progress table.
  ConcurrentLayout concurrent_layout(const Segment& segment, int budget) {
    struct Progress {
      int count = 1;
      int best_count = 1;
      double best_time = 0;
    };
    const size_t branches = segment.children.size();
    std::vector<Progress> progress(branches);
    for (size_t j = 0; j < branches; ++j) {
      progress[j].best_time = uniform_interior(segment.children[j].interior, {0, 1}).beta;
    }
    int used = static_cast<int>(branches);
    while (used < budget) {
      size_t slowest = 0;
      for (size_t j = 1; j < branches; ++j) {
        if (progress[j].best_time > progress[slowest].best_time) slowest = j;
      }
      Progress& grow = progress[slowest];
      const int next = grow.count + 1;
      if (next > costs_.usable() || !uniform_allowed(segment.children[slowest].interior, next)) break;
      grow.count = next;
      ++used;
      const double time = uniform_interior(segment.children[slowest].interior, {0, next}).beta;
      if (time < grow.best_time) {
        grow.best_time = time;
        grow.best_count = next;
      }
    }
    std::vector<size_t> order(branches);
    for (size_t j = 0; j < branches; ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return progress[a].best_count > progress[b].best_count; });
    ConcurrentLayout layout;
    layout.branches.assign(branches, Placement{});
    // Branches on one node where they fit (a mixed cluster's first group's nodes: an estimate).
    const int per_node = context_.network.cluster().devices_per_node();
    for (const bool align : {true, false}) {
      int cursor = 0;
      for (const size_t j : order) {
        const int count = progress[j].best_count;
        if (align && count <= per_node && cursor % per_node + count > per_node) {
          cursor += per_node - cursor % per_node;
        }
        layout.branches[j] = {cursor, count};
        cursor += count;
      }
      if (cursor <= costs_.devices()) break;
    }
    for (size_t j = 0; j < branches; ++j) {
      const std::vector<int32_t>& interior = segment.children[j].interior;
      layout.internal.push_back(uniform_interior(interior, layout.branches[j]));
      double forward = 0, backward = 0;
      for (const int32_t node : interior) {
        const LayerStep step = costs_.step(node, layout.branches[j]);
        forward += step.forward;
        backward += step.backward;
      }
      layout.forward.push_back(forward);
      layout.backward.push_back(backward);
    }
    return layout;
  }

  // ---- opaque: one count for all layers ------------------------------------------------

  OptionSet opaque_cell(const Segment& segment, size_t iu, size_t iv) {
    const int u_count = counts(segment.entry)[iu];
    const int v_count = counts(segment.exit)[iv];
    OptionSet cell(kInnerDims, kInnerCapacity);
    for (const int count : counts(segment.interior.front())) {
      if (!uniform_allowed(segment.interior, count)) continue;
      double in = 0, out = 0;
      for (const int32_t node : segment.interior) {
        for (const int32_t producer : sp_.producers[static_cast<size_t>(node)]) {
          if (producer == segment.entry) in += edge_time(producer, {0, u_count}, node, {0, count});
        }
        for (const int32_t consumer : sp_.consumers[static_cast<size_t>(node)]) {
          if (consumer == segment.exit) out += edge_time(node, {0, count}, consumer, {0, v_count});
        }
      }
      const Transform all = then(then(edge_transform(out), uniform_interior(segment.interior, {0, count})),
                                 edge_transform(in, gradient_into(segment.entry) ? in : 0));
      cell.insert(Option{all, count, -1, -1});
    }
    return cell;
  }

  // ---- the plan ---------------------------------------------------------------------------

  Plan make_plan() {
    Plan plan;
    plan.model = context_.graph.name();
    plan.strategy = "burst";
    plan.global_batch = costs_.global_batch();
    plan.devices = costs_.devices();
    for (int32_t node = 0; node < sp_.layers; ++node) {
      const Placement placement = placements_[static_cast<size_t>(node)];
      BURST_ASSERT(placement.count >= 1, fmt::format("layer '{}' was not placed", context_.graph.layer(node).name));
      plan.layers.push_back({context_.graph.layer(node).name, even_split(costs_.ranks(placement), plan.global_batch)});
    }
    return share_by_speed(context_, std::move(plan), &costs_.share_cache());  // a mixed cluster's shares; one kind: as it is
  }

  const PlanContext& context_;
  BurstOptions options_;
  PlannerCosts& costs_;
  SpGraph sp_;
  Segment root_;
  std::vector<std::vector<int>> counts_;  // allowed device counts per node
  std::unordered_map<const Segment*, Table> tables_;
  std::unordered_map<const Segment*, std::vector<ConcurrentLayout>> layouts_;
  std::vector<Placement> placements_;  // per layer
};

}  // namespace

constexpr int kMixedBranchCandidates = 12;

// What a burst plan must not be slower than (BurstOptions::never_slower_than_dp): data
// parallelism; on a mixed cluster the fastest of its splits (even, one ratio per kind, by
// blocks of layers) and of the best kind alone, with the baselines.
struct Reference {
  Plan plan;
  double time = 0;  // seconds, the evaluator's
  std::optional<MixedBaselines> baselines;
};

Reference reference_plan(const PlanContext& context, int64_t batch, const BurstOptions& options,
                         const EvaluateOptions& evaluation) {
  Reference reference;
  reference.plan = plan_data_parallel(context.graph, context.network.cluster().size(), batch);
  reference.time = evaluate_plan(reference.plan, context, evaluation).iteration_time.s();
  if (!context.heterogeneous()) return reference;
  // Mixed: beside the even split, one share per kind, shares by blocks of layers, and the
  // best kind alone; each evaluated once.
  reference.baselines = mixed_baselines(context, batch, options);
  for (Plan candidate : {reference.baselines->one_ratio, plan_layer_ratio_data_parallel(context, batch),
                         reference.baselines->alone}) {
    const double time = evaluate_plan(candidate, context, evaluation).iteration_time.s();
    if (time < reference.time) {
      reference.time = time;
      reference.plan = std::move(candidate);
    }
  }
  return reference;
}

std::vector<double> amplification_levels(const PlanContext& context, PlannerCosts& costs, const BurstOptions& options,
                                         double above) {
  std::vector<int> counts = costs.base_counts(std::max(2, options.max_candidates));
  for (const int count : costs.base_counts(std::max(2, options.max_branch_candidates))) counts.push_back(count);
  std::vector<double> levels;
  for (graph::LayerId layer = 0; layer < static_cast<graph::LayerId>(context.graph.size()); ++layer) {
    if (costs.exempt(layer)) continue;  // any count is allowed already
    for (const int count : counts) {
      const double level = costs.amplification(layer, count);
      if (level > above) levels.push_back(level);
    }
  }
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  return levels;
}

// UserError for a batch or amplification rule the planner cannot plan under.
void check_burst_request(int64_t global_batch, const BurstOptions& options) {
  if (global_batch < 1) throw UserError(fmt::format("global batch must be at least 1, got {}", global_batch));
  if (!(options.amplification >= 1)) {
    throw UserError(fmt::format("amplification limit must be at least 1 (or inf), got {}", options.amplification));
  }
  if (!(options.amplification_exempt_below.s() >= 0) || std::isinf(options.amplification_exempt_below.s())) {
    throw UserError(fmt::format("amplification exemption threshold must be a finite time >= 0, got {} ms",
                                options.amplification_exempt_below.ms()));
  }
}

}  // namespace detail

BurstPlanResult plan_burst_with_prediction(const PlanContext& context, int64_t global_batch,
                                           const BurstOptions& options) {
  detail::check_burst_request(global_batch, options);
  detail::PlannerCosts costs(context, global_batch, options);
  auto plan_under = [&](double limit) {
    BurstOptions limited = options;
    // A mixed cluster's re-shards are priced per link kind, several times the work of one
    // kind's: fewer counts inside branches (whose work grows with their cube) keep it in
    // seconds.
    if (context.heterogeneous()) limited.max_branch_candidates = std::min(limited.max_branch_candidates, detail::kMixedBranchCandidates);
    limited.amplification = limit;
    BurstPlanResult result = detail::Planner(context, costs, limited).run();
    result.amplification_limit = limit;
    return result;
  };
  BurstPlanResult result = plan_under(options.amplification);
  if (!options.never_slower_than_dp || (std::isinf(options.amplification) && !context.heterogeneous())) return result;

  const EvaluateOptions evaluation = options.evaluate_options();  // the step the plan will run
  const detail::Reference reference = detail::reference_plan(context, global_batch, options, evaluation);
  result.mixed_baselines = reference.baselines;
  auto fast_enough = [&](const BurstPlanResult& candidate) {
    return evaluate_plan(candidate.plan, context, evaluation).iteration_time.s() <= reference.time * (1 + 1e-12);
  };
  auto fallback = [&](double limit) {
    BurstPlanResult plan{reference.plan, Seconds(reference.time), limit, reference.baselines};
    plan.plan.strategy = "burst";
    return plan;
  };
  if (fast_enough(result)) return result;
  if (std::isinf(options.amplification)) return fallback(options.amplification);  // mixed: nothing left to raise
  // The plan can only change where some (layer, count) becomes allowed: search those
  // amplification levels for the lowest one that is fast enough (in the planner's model an
  // unlimited plan is at least as fast as data parallelism on chains; the evaluator may
  // still disagree, hence the fallback below).
  const std::vector<double> levels =
      detail::amplification_levels(context, costs, options, options.amplification);
  size_t low = 0, high = levels.size();  // levels[high] (or no limit) is fast enough
  BurstPlanResult best = plan_under(std::numeric_limits<double>::infinity());
  best.mixed_baselines = reference.baselines;
  if (!fast_enough(best)) {
    // The search missed data parallelism, which is in its space: on graphs with branches
    // the option sets are capped and the branch model approximate. Data parallelism it is
    // (mixed: or the kind alone, which prefix placements on all kinds do not reach).
    return fallback(std::numeric_limits<double>::infinity());
  }
  while (low < high) {
    const size_t middle = low + (high - low) / 2;
    BurstPlanResult candidate = plan_under(levels[middle]);
    if (fast_enough(candidate)) {
      best = std::move(candidate);
      best.mixed_baselines = reference.baselines;
      high = middle;
    } else {
      low = middle + 1;
    }
  }
  return best;
}

Plan plan_burst(const PlanContext& context, int64_t global_batch, const BurstOptions& options) {
  return plan_burst_with_prediction(context, global_batch, options).plan;
}

}  // namespace burst::planner
