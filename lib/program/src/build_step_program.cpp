#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include <fmt/format.h>

#include "burst/program/recompute_units.h"
#include "context_lift.h"
#include "burst/program/tensor_collectives.h"
#include "burst/program/step_program.h"
#include "burst/util/error.h"

namespace burst::program {

bool carries_gradient(const graph::Graph& graph, graph::LayerId producer) {
  return graph.layer(producer).op() != graph::OpKind::Input &&
         graph.info(producer).output_dtype == graph::DType::Float32;
}

namespace {

bool same_placement(const plan::LayerPlacement& a, const plan::LayerPlacement& b) {
  return std::equal(a.shards.begin(), a.shards.end(), b.shards.begin(), b.shards.end(),
                    [](const cost::Shard& x, const cost::Shard& y) { return x.rank == y.rank && x.samples == y.samples; });
}

std::vector<int> sorted_ranks(const std::vector<cost::Shard>& shards) {
  std::vector<int> ranks;
  for (const cost::Shard& shard : shards) ranks.push_back(shard.rank);
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

// The program of every rank, written in one global order: each rank's list is the
// subsequence of the ops it takes part in, so building costs O(ops), not ranks x layers.
class ProgramBuilder {
 public:
  // `context`: the devices each rank of `plan` will be lifted to (context_lift.h): above 1, a
  // rank alone still shares its gradients (with its context ranks), so groups of one rank
  // are kept for the lift to spread.
  ProgramBuilder(const graph::Graph& graph, const plan::Plan& plan, const ProgramOptions& options,
                 const BuildScope& scope, int context = 1)
      : graph_(graph), plan_(plan), options_(options), scope_(scope), layer_count_(static_cast<graph::LayerId>(graph.size())),
        fewest_sharing_(context > 1 ? 1 : 2) {
    BURST_ASSERT(plan.layers.size() == graph.size(), "build_step_program needs a validated plan");
    program_.ranks = plan.devices;
    program_.rank_clocks_mhz = plan.rank_clocks_mhz;
    program_.global_batch = plan.global_batch;
    program_.micro_batches = plan.pipeline.micro_batches;
    program_.micro_batch = plan.micro_batch();
    program_.split_backward = plan.pipeline.schedule == plan::Schedule::ZeroBubbleH1;
    program_.ops.resize(static_cast<size_t>(plan.devices));
    for (graph::LayerId id = 0; id < layer_count_; ++id) program_.splits.push_back(plan.layer_split(graph, id));
    split_plan_ = plan::has_tensor_split(plan);
    find_tied_groups();
    // Each rank's physical stage. Without stages every rank is of stage 0 (not asked of each
    // layer: data parallelism on thousands of ranks has every layer on all of them).
    rank_stage_.assign(static_cast<size_t>(plan.devices), 0);
    if (plan.stage_count() > 1) {
      for (size_t id = 0; id < plan.layers.size(); ++id) {
        const int stage = plan.stage_of(static_cast<graph::LayerId>(id)) % plan.physical_stages();
        for (const cost::Shard& shard : plan.layers[id].shards) rank_stage_[static_cast<size_t>(shard.rank)] = stage;
      }
    }
    deferred_.resize(static_cast<size_t>(plan.devices));
    if (options.recompute == cost::Recompute::Full) units_ = recompute_units(graph);
  }

  StepProgram build() && {
    make_segments();
    find_tensor_collectives();
    make_groups();
    make_pieces();
    choose_representatives();
    make_buckets();
    for (int stage = 0; stage < plan_.physical_stages(); ++stage) add_stage(stage);
    add_step_end();
    return std::move(program_);
  }

 private:
  const plan::LayerPlacement& placement(graph::LayerId id) const { return plan_.layers[static_cast<size_t>(id)]; }
  bool internal(graph::LayerId producer, graph::LayerId consumer) const {
    return program_.segment_of[static_cast<size_t>(producer)] == program_.segment_of[static_cast<size_t>(consumer)];
  }
  bool built(int rank) const { return program_.representative[static_cast<size_t>(rank)] == rank; }
  void emit(int rank, const Op& op) {
    if (built(rank)) program_.ops[static_cast<size_t>(rank)].push_back(op);
  }

  // Whether layer `id` reads every input of the open segment as the producer leaves it
  // (sliced where it reads a slice, whole where it reads all features).
  bool reads_segment_as_is(graph::LayerId id) const {
    const auto segment = static_cast<int32_t>(program_.segments.size() - 1);
    const bool sliced_input = cost::input_sliced(placement(id).split.kind);
    for (const graph::LayerId producer : graph_.inputs(id)) {
      if (program_.segment_of[static_cast<size_t>(producer)] != segment) continue;
      if (cost::output_sliced(placement(producer).split.kind) != sliced_input) return false;
    }
    return true;
  }

  // Activations and gradients move in the step's precision; graphs count fp32 bytes.
  int64_t at_precision(int64_t fp32_bytes) const {
    return static_cast<int64_t>(static_cast<double>(fp32_bytes) * cost::value_bytes(options_.precision) / cost::kFloatBytes);
  }
  bool starts_unit(graph::LayerId id) const {
    return !units_.unit_of.empty() && units_.unit_of[static_cast<size_t>(id)] != units_.unit_of[static_cast<size_t>(id - 1)];
  }

  void make_segments() {
    program_.segment_of.assign(graph_.size(), -1);
    for (graph::LayerId id = 0; id < layer_count_; ++id) {
      if (id == 0 || !same_placement(placement(id - 1), placement(id)) || plan_.stage_of(id - 1) != plan_.stage_of(id) ||
          !reads_segment_as_is(id) || starts_unit(id)) {
        program_.segments.push_back(Segment{{}, placement(id).shards, placement(id).split.parts});
      }
      program_.segments.back().layers.push_back(id);
      program_.segment_of[static_cast<size_t>(id)] = static_cast<int32_t>(program_.segments.size() - 1);
    }
  }

  bool syncs_batchnorm(graph::LayerId id) const {
    return options_.sync_batchnorm && graph_.layer(id).op() == graph::OpKind::BatchNorm2d &&
           placement(id).shards.size() >= 2;
  }

  // Whether layer `id` all-reduces weight gradients (plan::sync_group is not empty). A
  // sequence split's parts hold gradients of their own tokens only: they are summed over
  // every rank of the layer, its tensor groups' parts included (Megatron's all-reduce of
  // the sequence-parallel norms' gradients).
  bool has_gradients(graph::LayerId id) const {
    if (!tied_group_[static_cast<size_t>(id)].empty()) return true;
    if (graph_.info(id).params == 0) return false;
    return sequence_split(id) ? placement(id).shards.size() >= fewest_sharing_
                              : placement(id).sample_groups() >= fewest_sharing_;
  }
  bool sequence_split(graph::LayerId id) const {
    return placement(id).split.splits() && placement(id).split.kind == cost::SplitKind::Sequence;
  }
  bool sums_sequence_gradients(const Segment& segment) const {
    return std::any_of(segment.layers.begin(), segment.layers.end(),
                       [&](graph::LayerId id) { return sequence_split(id) && has_gradients(id); });
  }

  // By layer: for an embedding whose tied heads run on ranks it does not, the ranks that
  // sum its gradients (plan::sync_group: its own and its heads'); empty otherwise. Found
  // once.
  void find_tied_groups() {
    tied_group_.assign(graph_.size(), {});
    for (graph::LayerId embedding = 0; embedding < layer_count_; ++embedding) {
      if (graph_.tied_heads(embedding).empty()) continue;
      std::vector<int> group = plan::sync_group(plan_, graph_, embedding);
      if (group.size() > placement(embedding).shards.size()) tied_group_[static_cast<size_t>(embedding)] = group;
    }
  }

  // Gradient groups (layers with parameters on several sample groups: one group per part,
  // the ranks of that part), BatchNorm statistics groups and tensor groups (the parts of
  // one sample group, for a segment with a row, column or heads split). A segment's layers
  // share its ranks: each segment's are sorted once (data parallelism on thousands of ranks
  // has every layer on all of them).
  void make_groups() {
    std::vector<std::vector<std::vector<int>>> part_ranks;  // by segment, by part
    std::vector<std::vector<std::vector<int>>> tensor_ranks;  // by segment, by sample group
    std::vector<std::vector<int>> sequence_ranks;  // by segment: all its ranks, where sequence splits sum gradients
    std::vector<std::vector<int>> all;
    for (const Segment& segment : program_.segments) {
      const auto parts = static_cast<size_t>(segment.parts);
      part_ranks.emplace_back(parts);
      for (size_t i = 0; i < segment.shards.size(); ++i) part_ranks.back()[i % parts].push_back(segment.shards[i].rank);
      for (std::vector<int>& ranks : part_ranks.back()) std::sort(ranks.begin(), ranks.end());
      // (A tied embedding's gradients go to its own group, below.)
      const bool syncs = std::any_of(segment.layers.begin(), segment.layers.end(), [&](graph::LayerId id) {
        return (has_gradients(id) && tied_group_[static_cast<size_t>(id)].empty()) || syncs_batchnorm(id);
      });
      if (syncs) {
        all.insert(all.end(), part_ranks.back().begin(), part_ranks.back().end());
        add_hybrid_groups(part_ranks.back(), segment, all);
      }
      sequence_ranks.push_back(sums_sequence_gradients(segment) ? sorted_ranks(segment.shards) : std::vector<int>{});
      if (!sequence_ranks.back().empty()) all.push_back(sequence_ranks.back());
      tensor_ranks.push_back(tensor_groups_of(segment));
      all.insert(all.end(), tensor_ranks.back().begin(), tensor_ranks.back().end());
    }
    // A tied embedding's gradients are summed over its heads' ranks too (plan::sync_group).
    for (const std::vector<int>& group : tied_group_) {
      if (!group.empty()) all.push_back(group);
    }
    const std::vector<ExpertRanks> experts = add_expert_groups(all);
    std::vector<int> world(static_cast<size_t>(program_.ranks));
    std::iota(world.begin(), world.end(), 0);
    if (options_.clip_grad_norm > 0 && world.size() >= fewest_sharing_) all.push_back(world);  // the gradient norm's sum
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    program_.groups = all;
    const auto group_index = [&all, this](const std::vector<int>& ranks) {
      if (ranks.size() < fewest_sharing_) return -1;
      const auto found = std::lower_bound(all.begin(), all.end(), ranks);
      return found == all.end() || *found != ranks ? -1 : static_cast<int32_t>(found - all.begin());
    };
    layer_groups_.assign(graph_.size(), {});
    tensor_groups_.assign(program_.segments.size(), {});
    for (size_t s = 0; s < program_.segments.size(); ++s) {
      std::vector<int32_t> groups;
      for (const std::vector<int>& ranks : part_ranks[s]) groups.push_back(group_index(ranks));
      for (const graph::LayerId id : program_.segments[s].layers) {
        layer_groups_[static_cast<size_t>(id)] = sequence_split(id) ? std::vector<int32_t>{group_index(sequence_ranks[s])} : groups;
      }
      for (const std::vector<int>& ranks : tensor_ranks[s]) tensor_groups_[s].push_back(group_index(ranks));
    }
    for (graph::LayerId id = 0; id < layer_count_; ++id) {
      const std::vector<int>& tied = tied_group_[static_cast<size_t>(id)];
      if (!tied.empty()) layer_groups_[static_cast<size_t>(id)] = {group_index(tied)};
    }
    world_group_ = group_index(world);
    index_hybrid_groups(group_index);
    index_expert_groups(experts, group_index);
  }

  // Expert parallelism (plan::Plan::expert_parallel = E): for each moe layer, the ranks of
  // each E consecutive sample groups (its expert groups: they exchange tokens) and of the
  // sample groups holding the same E-th of the experts (replicas: their gradients are summed).
  struct ExpertRanks {
    graph::LayerId layer = -1;
    std::vector<std::vector<int>> exchanges;  // by expert group, sorted
    std::vector<std::vector<int>> replicas;   // by expert slice, sorted
  };
  std::vector<ExpertRanks> expert_ranks() const {
    std::vector<ExpertRanks> found;
    const auto e = static_cast<size_t>(plan_.expert_parallel);
    if (e < 2) return found;
    for (graph::LayerId id = 0; id < layer_count_; ++id) {
      if (graph_.layer(id).op() != graph::OpKind::Moe) continue;
      const std::vector<cost::Shard>& shards = placement(id).shards;  // one a sample group (validate_plan)
      ExpertRanks ranks{id, std::vector<std::vector<int>>(shards.size() / e), std::vector<std::vector<int>>(e)};
      for (size_t g = 0; g < shards.size(); ++g) {
        ranks.exchanges[g / e].push_back(shards[g].rank);
        ranks.replicas[g % e].push_back(shards[g].rank);
      }
      for (auto* lists : {&ranks.exchanges, &ranks.replicas}) {
        for (std::vector<int>& list : *lists) std::sort(list.begin(), list.end());
      }
      found.push_back(std::move(ranks));
    }
    return found;
  }
  std::vector<ExpertRanks> add_expert_groups(std::vector<std::vector<int>>& all) const {
    std::vector<ExpertRanks> experts = expert_ranks();
    for (const ExpertRanks& ranks : experts) {
      all.insert(all.end(), ranks.exchanges.begin(), ranks.exchanges.end());
      all.insert(all.end(), ranks.replicas.begin(), ranks.replicas.end());
    }
    return experts;
  }
  // expert_exchange_ and expert_replica_ by rank, from expert_ranks' lists.
  template <typename GroupIndex>
  void index_expert_groups(const std::vector<ExpertRanks>& experts, const GroupIndex& group_index) {
    for (const ExpertRanks& ranks : experts) {
      auto& exchange = expert_exchange_[ranks.layer];
      for (const std::vector<int>& list : ranks.exchanges) {
        for (const int rank : list) exchange[rank] = group_index(list);
      }
      std::vector<int32_t>& replicas = expert_replicas_[ranks.layer];
      for (const std::vector<int>& list : ranks.replicas) replicas.push_back(group_index(list));
    }
  }

  // hybrid_ from hybrid_ranks_, by the groups' indices: rank ranks[i] of a gradient group is
  // in shard group i / shard and replica group i % shard.
  template <typename GroupIndex>
  void index_hybrid_groups(const GroupIndex& group_index) {
    const auto shard = static_cast<size_t>(options_.fsdp_shard);
    for (const auto& [ranks, cut] : hybrid_ranks_) {
      auto& by_rank = hybrid_[group_index(ranks)];
      for (size_t i = 0; i < ranks.size(); ++i) {
        by_rank[ranks[i]] = {group_index(cut.shards[i / shard]), group_index(cut.replicas[i % shard])};
      }
    }
  }

  // HSDP (ProgramOptions::fsdp_shard): each gradient group of d > shard ranks cut once into
  // d / shard shard groups of consecutive ranks (in its sorted order) and `shard` replica
  // groups (the ranks at one position of every shard group), each added to `all` once.
  void add_hybrid_groups(const std::vector<std::vector<int>>& groups, const Segment& segment,
                         std::vector<std::vector<int>>& all) {
    const auto shard = static_cast<size_t>(options_.fsdp_shard);
    if (shard == 0) return;
    if (shard < fewest_sharing_) {  // (under context parallelism a group of one is its C devices)
      throw UserError("--fsdp-shard 1 shards over one rank, which shards nothing: use --zero 0, 1 or 2 to replicate");
    }
    for (const std::vector<int>& ranks : groups) {
      if (ranks.size() <= shard || hybrid_ranks_.count(ranks) > 0) continue;
      if (ranks.size() % shard != 0) {
        throw UserError(fmt::format("--fsdp-shard {} does not divide the {} ranks that share the gradients of '{}'",
                                    shard, ranks.size(), graph_.layer(first_with_gradients(segment)).name));
      }
      HybridCut& cut = hybrid_ranks_[ranks];
      for (size_t first = 0; first < ranks.size(); first += shard) {
        cut.shards.emplace_back(ranks.begin() + static_cast<std::ptrdiff_t>(first),
                                ranks.begin() + static_cast<std::ptrdiff_t>(first + shard));
      }
      cut.replicas.resize(shard);
      for (size_t i = 0; i < ranks.size(); ++i) cut.replicas[i % shard].push_back(ranks[i]);
      all.insert(all.end(), cut.shards.begin(), cut.shards.end());
      all.insert(all.end(), cut.replicas.begin(), cut.replicas.end());
    }
  }

  graph::LayerId first_with_gradients(const Segment& segment) const {
    for (const graph::LayerId id : segment.layers) {
      if (has_gradients(id)) return id;
    }
    return segment.layers.front();
  }

  // The group a rank shards its part of a gradient group over: the group, or under HSDP its
  // shard group (and, in `replica`, the replica group its shard is all-reduced over).
  int32_t sharding_group(int32_t group, int rank, int32_t* replica = nullptr) const {
    const auto found = hybrid_.find(group);
    if (found == hybrid_.end()) return group;
    const auto& [shard, replicas] = found->second.at(rank);
    if (replica != nullptr) *replica = replicas;
    return shard;
  }

  // A segment's tensor groups (each sample group's parts, sorted) where a layer of it runs a
  // tensor collective; none otherwise.
  std::vector<std::vector<int>> tensor_groups_of(const Segment& segment) const {
    std::vector<std::vector<int>> groups;
    if (std::none_of(segment.layers.begin(), segment.layers.end(), [&](graph::LayerId id) { return reduces_tensor(id); })) {
      return groups;
    }
    const auto parts = static_cast<size_t>(segment.parts);
    for (size_t first = 0; first < segment.shards.size(); first += parts) {
      groups.push_back(sorted_ranks({segment.shards.begin() + static_cast<std::ptrdiff_t>(first),
                                     segment.shards.begin() + static_cast<std::ptrdiff_t>(first + parts)}));
    }
    return groups;
  }

  // A tensor collective's bytes a sample for `moved`'s output: the activation at the step's
  // precision; for a vocabulary-parallel loss, each token's maximum, exponential sum and
  // target logit (3 fp32 values), which the parts all-reduce.
  int64_t tensor_collective_bytes(graph::LayerId moved) const {
    if (graph_.layer(moved).op() == graph::OpKind::SoftmaxCrossEntropy) {
      const graph::Shape& logits = graph_.info(graph_.inputs(moved).at(0)).output_shape;
      return 3 * logits.front() * static_cast<int64_t>(cost::kFloatBytes);
    }
    return at_precision(graph_.info(moved).output_bytes);
  }

  // Every layer's tensor-group collectives (tensor_collectives.h), once the segments are known.
  void find_tensor_collectives() {
    const SameTensorGroup same_group = program_tensor_groups(program_);
    collectives_.reserve(graph_.size());
    for (graph::LayerId id = 0; id < layer_count_; ++id) {
      collectives_.push_back(tensor_collectives(graph_, program_.splits, same_group, id));
    }
  }

  // Whether layer `id` runs a collective over its tensor group (tensor_collectives.h).
  bool reduces_tensor(graph::LayerId id) const {
    const TensorCollectives& tensor = collectives_[static_cast<size_t>(id)];
    return tensor.after_forward || tensor.before_backward || tensor.after_backward;
  }

  // Every use of a producer by a consumer in another segment: its activation pieces and,
  // when gradients flow back, the gradient pieces (the same ranges, reversed), once per
  // micro-batch. Tags in creation order, messages only.
  void make_pieces() {
    const auto micro_batches = static_cast<size_t>(program_.micro_batches);
    activation_pieces_.assign(micro_batches, PieceLists(graph_.size()));
    gradient_pieces_.assign(micro_batches, PieceLists(graph_.size()));
    uses_.resize(graph_.size());
    for (graph::LayerId consumer = 0; consumer < layer_count_; ++consumer) {
      const auto& producers = graph_.inputs(consumer);
      for (size_t j = 0; j < micro_batches; ++j) {
        activation_pieces_[j][static_cast<size_t>(consumer)].resize(producers.size());
        gradient_pieces_[j][static_cast<size_t>(consumer)].resize(producers.size());
      }
      for (size_t k = 0; k < producers.size(); ++k) {
        const graph::LayerId producer = producers[k];
        if (internal(producer, consumer)) continue;
        uses_[static_cast<size_t>(producer)].emplace_back(consumer, k);
        const auto [forward, backward] = transfers(producer, consumer, k);
        for (size_t j = 0; j < micro_batches; ++j) {
          add_pieces(producer, consumer, k, static_cast<int32_t>(j), forward, false);
          if (carries_gradient(graph_, producer)) add_pieces(producer, consumer, k, static_cast<int32_t>(j), backward, true);
        }
      }
    }
    if (next_tag_ > kTagLimit) {
      throw UserError(fmt::format("the plan needs {} messages per step; the runtime's tags allow {}", next_tag_,
                                  kTagLimit));
    }
  }

  // The pieces of one use, forward (producer's ranks to consumer's) and backward (the
  // gradient, the consumer's ranks to the producer's), each by first sample, then feature.
  // Without tensor splits, the sample re-shard and its reverse.
  std::pair<std::vector<cost::BlockTransfer>, std::vector<cost::BlockTransfer>> transfers(graph::LayerId producer,
                                                                                        graph::LayerId consumer,
                                                                                        size_t k) const {
    std::vector<cost::BlockTransfer> forward, backward;
    if (split_plan_) {
      forward = plan::forward_blocks(plan_, graph_, producer, consumer, k);
      backward = plan::backward_blocks(plan_, graph_, producer, consumer, k);
    } else {
      const cost::FeatureRange all{0, cost::output_features(graph_, producer)};
      for (const cost::Transfer& t : plan::activation_transfers(plan_, producer, consumer)) {
        forward.push_back(cost::BlockTransfer{t.src_rank, t.dst_rank, t.samples, all});
        backward.push_back(cost::BlockTransfer{t.dst_rank, t.src_rank, t.samples, all});
      }
    }
    const auto by_position = [](const cost::BlockTransfer& a, const cost::BlockTransfer& b) {
      return std::make_pair(a.samples.begin, a.features.begin) < std::make_pair(b.samples.begin, b.features.begin);
    };
    std::stable_sort(forward.begin(), forward.end(), by_position);
    std::stable_sort(backward.begin(), backward.end(), by_position);
    return {std::move(forward), std::move(backward)};
  }

  void add_pieces(graph::LayerId producer, graph::LayerId consumer, size_t k, int32_t micro,
                  const std::vector<cost::BlockTransfer>& transfers, bool gradient) {
    const int64_t bytes_per_sample = graph_.info(producer).output_bytes;
    const int64_t features = cost::output_features(graph_, producer);
    auto& list = (gradient ? gradient_pieces_ : activation_pieces_)[static_cast<size_t>(micro)]
                                                                    [static_cast<size_t>(consumer)][k];
    for (const cost::BlockTransfer& t : transfers) {
      Piece piece;
      piece.producer = producer;
      piece.consumer = consumer;
      piece.input = static_cast<int32_t>(k);
      piece.micro = micro;
      piece.gradient = gradient;
      piece.sender = t.src_rank;
      piece.receiver = t.dst_rank;
      piece.samples = t.samples;
      piece.features = t.features;
      piece.bytes = at_precision(t.samples.size() * bytes_per_sample / features * t.features.size());
      if (!piece.local()) piece.tag = next_tag_++;
      list.push_back(static_cast<int32_t>(program_.pieces.size()));
      program_.pieces.push_back(piece);
    }
  }

  // Who stands for whom (BuildScope::one_rank_per_class). A rank's class is its list
  // of (segment, shard size, part); a rank that sends or receives a message is a class of
  // its own. Segments, and so groups, buckets and updates, follow from that list; the
  // pieces of a rank without messages are copies, whichever its samples.
  void choose_representatives() {
    const auto ranks = static_cast<size_t>(program_.ranks);
    program_.mirrored = false;
    std::vector<std::vector<std::tuple<int32_t, int64_t, int32_t>>> shards_of(ranks);
    for (size_t s = 0; s < program_.segments.size(); ++s) {
      const Segment& segment = program_.segments[s];
      for (size_t i = 0; i < segment.shards.size(); ++i) {
        shards_of[static_cast<size_t>(segment.shards[i].rank)].emplace_back(
            static_cast<int32_t>(s), segment.shards[i].samples.size(), static_cast<int32_t>(i % static_cast<size_t>(segment.parts)));
      }
    }
    // Ranks at different clocks time differently: the clock is part of the class.
    if (!program_.rank_clocks_mhz.empty()) {
      for (size_t rank = 0; rank < ranks; ++rank) {
        if (shards_of[rank].empty()) continue;
        shards_of[rank].emplace_back(-1, std::llround(program_.rank_clocks_mhz[rank] * 1000), 0);
      }
    }
    program_.representative.assign(ranks, -1);
    if (scope_.one_rank_per_class && mirrored_classes(shards_of)) return;
    std::vector<char> exchanges(ranks, 0);
    for (const Piece& piece : program_.pieces) {
      if (!piece.local()) exchanges[static_cast<size_t>(piece.sender)] = exchanges[static_cast<size_t>(piece.receiver)] = 1;
    }
    std::map<std::vector<std::tuple<int32_t, int64_t, int32_t>>, int32_t> classes;
    for (size_t rank = 0; rank < ranks; ++rank) {
      if (shards_of[rank].empty()) continue;
      auto representative = static_cast<int32_t>(rank);
      if (scope_.one_rank_per_class && !exchanges[rank]) {
        representative = classes.emplace(std::move(shards_of[rank]), representative).first->second;
      }
      program_.representative[rank] = representative;
    }
  }

  // Classes that exchange messages, when they mirror each other (a 3-D plan's data-parallel
  // replicas: part q of sample group g talks only to part q of group g next door): every
  // rank in the class of the lowest rank with its shard list, kept only if (1) a
  // representative's messages all go to and come from representatives, and (2) each rank's
  // messages, described by direction, the peer's class, the piece's layers, input,
  // micro-batch, kind and sizes, are its representative's. Then a representative's timeline
  // is each member's, messages and ports included, and StepProgram::mirrored says so.
  bool mirrored_classes(const std::vector<std::vector<std::tuple<int32_t, int64_t, int32_t>>>& shards_of) {
    const size_t ranks = shards_of.size();
    std::vector<int32_t> representative(ranks, -1);
    std::map<std::vector<std::tuple<int32_t, int64_t, int32_t>>, int32_t> classes;
    bool merges = false;
    for (size_t rank = 0; rank < ranks; ++rank) {
      if (shards_of[rank].empty()) continue;
      representative[rank] = classes.emplace(shards_of[rank], static_cast<int32_t>(rank)).first->second;
      merges = merges || representative[rank] != static_cast<int32_t>(rank);
    }
    if (!merges) return false;
    using Message = std::tuple<bool, int32_t, graph::LayerId, graph::LayerId, int32_t, int32_t, bool, int64_t, int64_t, int64_t>;
    std::vector<std::vector<Message>> messages(ranks);
    for (const Piece& piece : program_.pieces) {
      if (piece.local()) continue;
      const auto sender = static_cast<size_t>(piece.sender), receiver = static_cast<size_t>(piece.receiver);
      const bool sender_stands = representative[sender] == piece.sender;
      if (sender_stands != (representative[receiver] == piece.receiver)) return false;  // not closed
      const auto describe = [&](bool receives, size_t peer) {
        return Message{receives, representative[peer], piece.producer, piece.consumer, piece.input, piece.micro,
                       piece.gradient, piece.bytes, piece.samples.size(), piece.features.size()};
      };
      messages[sender].push_back(describe(false, receiver));
      messages[receiver].push_back(describe(true, sender));
    }
    for (auto& list : messages) std::sort(list.begin(), list.end());
    for (size_t rank = 0; rank < ranks; ++rank) {
      if (representative[rank] >= 0 && messages[rank] != messages[static_cast<size_t>(representative[rank])]) return false;
    }
    program_.representative = std::move(representative);
    program_.mirrored = true;
    return true;
  }

  // In backward order, each layer with a sync group joins its group's open bucket (a split
  // layer: each part's group, with the part's share of the weights); the bucket closes at
  // bucket_bytes or with the group's last layer.
  void make_buckets() {
    closes_.assign(graph_.size(), {});
    std::vector<graph::LayerId> last_of_group(program_.groups.size(), -1);  // lowest id
    for (graph::LayerId id = 0; id < layer_count_; ++id) {
      if (!has_gradients(id)) continue;
      for (const auto& [group, params] : gradient_shares(id)) {
        graph::LayerId& last = last_of_group[static_cast<size_t>(group)];
        if (last < 0) last = id;
      }
    }
    std::vector<int32_t> open(program_.groups.size(), -1);
    std::vector<char> started(program_.groups.size(), 0);  // a bucket of the group has closed
    for (graph::LayerId id = layer_count_ - 1; id >= 0; --id) {
      if (!has_gradients(id)) continue;
      for (const auto& [group, params] : gradient_shares(id)) {
        const int64_t bytes = at_precision(params * 4);
        Bucket& bucket = open_bucket(open[static_cast<size_t>(group)], group);
        bucket.layers.push_back(id);
        bucket.bytes += bytes;
        bucket.params += params;
        // DDP's rule: a group's first bucket (the last layers, whose gradients come first) is
        // capped at first_bucket_bytes, so its all-reduce starts early in backward.
        const bool first = !started[static_cast<size_t>(group)];
        const double cap = first ? std::min(options_.first_bucket_bytes, options_.bucket_bytes) : options_.bucket_bytes;
        if (static_cast<double>(bucket.bytes) >= cap || id == last_of_group[static_cast<size_t>(group)]) {
          started[static_cast<size_t>(group)] = 1;
          bucket.closed_by = id;
          closes_[static_cast<size_t>(id)].push_back(open[static_cast<size_t>(group)]);
          open[static_cast<size_t>(group)] = -1;
        }
      }
    }
    // Buckets are numbered in closing order (the order their all-reduces start).
    std::vector<int32_t> order;
    for (graph::LayerId id = layer_count_ - 1; id >= 0; --id) {
      for (const int32_t bucket : closes_[static_cast<size_t>(id)]) order.push_back(bucket);
    }
    std::vector<int32_t> renumber(pending_buckets_.size(), -1);
    for (size_t i = 0; i < order.size(); ++i) {
      renumber[static_cast<size_t>(order[i])] = static_cast<int32_t>(i);
      program_.buckets.push_back(pending_buckets_[static_cast<size_t>(order[i])]);
    }
    for (std::vector<int32_t>& buckets : closes_) {
      for (int32_t& bucket : buckets) bucket = renumber[static_cast<size_t>(bucket)];
    }
  }
  // The gradient groups of layer `id` with the parameters each sums: the layer's groups with
  // its part's parameters; under expert parallelism a moe layer's router and shared experts
  // over its group, and each E-th of its experts over the sample groups that hold it.
  std::vector<std::pair<int32_t, int64_t>> gradient_shares(graph::LayerId id) const {
    std::vector<std::pair<int32_t, int64_t>> shares;
    const auto replicas = expert_replicas_.find(id);
    const int64_t experts = replicas == expert_replicas_.end() ? 0 : cost::expert_params(graph_, id);
    const int64_t dense = cost::part_params(graph_, id, placement(id).split) - experts;
    for (const int32_t group : layer_groups_[static_cast<size_t>(id)]) {
      if (group >= 0) shares.emplace_back(group, dense);
    }
    if (replicas == expert_replicas_.end()) return shares;
    for (const int32_t group : replicas->second) {
      if (group >= 0) shares.emplace_back(group, experts / plan_.expert_parallel);  // a rank's E-th of them
    }
    return shares;
  }

  Bucket& open_bucket(int32_t& index, int32_t group) {
    if (index < 0) {
      index = static_cast<int32_t>(pending_buckets_.size());
      Bucket bucket;
      bucket.group = group;
      bucket.closed_by = -1;
      pending_buckets_.push_back(bucket);
    }
    return pending_buckets_[static_cast<size_t>(index)];
  }

  void emit_pieces(const std::vector<int32_t>& pieces, OpKind receive, OpKind send, bool receives) {
    for (const int32_t index : pieces) {
      const Piece& piece = program_.pieces[static_cast<size_t>(index)];
      Op op;
      op.layer = piece.consumer;
      op.piece = index;
      op.micro = piece.micro;
      if (receives) {
        op.kind = receive;
        emit(piece.receiver, op);
      } else if (!piece.local()) {
        op.kind = send;
        emit(piece.sender, op);
      }
    }
  }

  bool gathers_weights(graph::LayerId id) const {
    return options_.zero_stage == 3 && has_gradients(id) && tied_group_[static_cast<size_t>(id)].empty();
  }

  // ZeRO 3: each shard's rank gathers the layer's weights (its part's) from its gradient
  // group before computing with them.
  void emit_weight_gather(int32_t segment, graph::LayerId id, bool backward, int32_t micro) {
    const Segment& seg = program_.segments[static_cast<size_t>(segment)];
    const auto parts = static_cast<size_t>(seg.parts);
    Op op;
    op.kind = OpKind::AllGather;
    op.layer = id;
    op.segment = segment;
    op.backward = backward;
    op.micro = micro;
    op.bytes = at_precision(cost::part_params(graph_, id, plan_.layer_split(graph_, id)) * 4);
    for (size_t i = 0; i < seg.shards.size(); ++i) {
      const std::vector<int32_t>& groups = layer_groups_[static_cast<size_t>(id)];  // by part, or one for all
      const int32_t group = groups[groups.size() == 1 ? 0 : i % parts];
      if (group < 0) continue;
      op.group = sharding_group(group, seg.shards[i].rank);
      emit(seg.shards[i].rank, op);
    }
  }

  // RECOMPUTE of layer `id` on its segment's ranks: its weights first under ZeRO 3.
  void emit_recompute(int32_t segment, graph::LayerId id, int32_t micro) {
    if (gathers_weights(id)) emit_weight_gather(segment, id, true, micro);
    Op op;
    op.kind = OpKind::Recompute;
    op.layer = id;
    op.segment = segment;
    op.micro = micro;
    for (const cost::Shard& shard : program_.segments[static_cast<size_t>(segment)].shards) emit(shard.rank, op);
  }

  // Whether the step recomputes layer `id`: every layer under full recomputation, the
  // attention layers under selective.
  bool recomputed(graph::LayerId id) const {
    if (options_.recompute == cost::Recompute::Full) return true;
    return options_.recompute == cost::Recompute::Selective && graph_.layer(id).op() == graph::OpKind::SelfAttention;
  }

  void emit_compute(int32_t segment, graph::LayerId id, bool backward, int32_t micro) {
    const std::vector<cost::Shard>& shards = program_.segments[static_cast<size_t>(segment)].shards;
    // A recomputed layer's backward gather came with its RECOMPUTE.
    if (gathers_weights(id) && !(backward && recomputed(id))) emit_weight_gather(segment, id, backward, micro);
    if (backward) {
      const auto before = collectives_[static_cast<size_t>(id)].before_backward;
      if (before) emit_tensor_collective(*before, segment, id, id, true, micro);
    }
    Op op;
    op.kind = backward ? OpKind::Backward : OpKind::Forward;
    op.layer = id;
    op.segment = segment;
    op.micro = micro;
    emit_expert_exchange(backward ? OpKind::ExpertCombine : OpKind::ExpertDispatch, segment, id, backward, micro);
    for (const cost::Shard& shard : shards) emit(shard.rank, op);
    emit_expert_exchange(backward ? OpKind::ExpertDispatch : OpKind::ExpertCombine, segment, id, backward, micro);
    if (syncs_batchnorm(id)) {
      Op sync;
      sync.kind = OpKind::SyncBatchNorm;
      sync.layer = id;
      sync.group = layer_groups_[static_cast<size_t>(id)].front();
      sync.backward = backward;
      sync.micro = micro;
      for (const cost::Shard& shard : shards) emit(shard.rank, sync);
    }
    const TensorCollectives& tensor = collectives_[static_cast<size_t>(id)];
    if (!backward && tensor.after_forward) emit_tensor_collective(*tensor.after_forward, segment, id, id, false, micro);
    if (backward && tensor.after_backward) {
      emit_tensor_collective(*tensor.after_backward, segment, id, tensor.input, true, micro);
    }
  }

  // Expert parallelism: a moe layer's all-to-all of its tokens' top-k copies over each rank's
  // expert group (its shard's samples x tokens x top_k x D at the step's precision).
  void emit_expert_exchange(OpKind kind, int32_t segment, graph::LayerId id, bool backward, int32_t micro) {
    const auto exchange = expert_exchange_.find(id);
    if (exchange == expert_exchange_.end()) return;
    const auto& moe = std::get<graph::MoeAttrs>(graph_.layer(id).attrs);
    const graph::Shape& shape = graph_.info(id).output_shape;  // [T, D]
    for (const cost::Shard& shard : program_.segments[static_cast<size_t>(segment)].shards) {
      Op op;
      op.kind = kind;
      op.layer = id;
      op.segment = segment;
      op.backward = backward;
      op.micro = micro;
      op.group = exchange->second.at(shard.rank);
      op.bytes = at_precision(shard.samples.size() * shape.at(0) * moe.top_k * shape.at(1) * 4);
      emit(shard.rank, op);
    }
  }

  // A tensor group's collective (tensor_collectives.h) by layer `id` over each sample group's
  // parts, of the output (or its gradient) of `moved`: `id` itself, or its input.
  void emit_tensor_collective(OpKind kind, int32_t segment, graph::LayerId id, graph::LayerId moved, bool backward,
                              int32_t micro) {
    const Segment& seg = program_.segments[static_cast<size_t>(segment)];
    const auto parts = static_cast<size_t>(seg.parts);
    for (size_t g = 0; g * parts < seg.shards.size(); ++g) {
      Op op;
      op.kind = kind;
      op.layer = id;
      op.segment = segment;
      op.group = tensor_groups_[static_cast<size_t>(segment)][g];
      op.backward = backward;
      op.micro = micro;
      op.bytes = seg.shards[g * parts].samples.size() * tensor_collective_bytes(moved);
      for (size_t p = 0; p < parts; ++p) emit(seg.shards[g * parts + p].rank, op);
    }
  }

  // Physical stage `stage`'s ops for every micro-batch of each of its chunks, in its
  // schedule's order (plan::physical_stage_order); a chunk's gradients are whole after its
  // last backward.
  void add_stage(int stage) {
    std::vector<std::vector<int32_t>> segments(static_cast<size_t>(plan_.stage_count()));  // by chunk
    for (int32_t s = 0; s < static_cast<int32_t>(program_.segments.size()); ++s) {
      segments[static_cast<size_t>(plan_.stage_of(program_.segments[static_cast<size_t>(s)].layers.front()))].push_back(s);
    }
    const std::vector<plan::PipelineStep> order = plan::physical_stage_order(plan_, stage);
    // A chunk's gradients are whole after its last backward, or (split) its last W.
    const bool split = program_.split_backward;
    std::vector<int64_t> last_backward(segments.size(), -1);
    for (const plan::PipelineStep& step : order) {
      if (split ? step.weight : step.backward) last_backward[static_cast<size_t>(step.chunk)] = step.micro;
    }
    for (const plan::PipelineStep& step : order) {
      const auto micro = static_cast<int32_t>(step.micro);
      const std::vector<int32_t>& chunk = segments[static_cast<size_t>(step.chunk)];
      if (!step.backward && !step.weight) {
        for (const int32_t s : chunk) add_segment_forward(s, micro);
        continue;
      }
      const bool last = step.micro == last_backward[static_cast<size_t>(step.chunk)];
      for (auto s = chunk.rbegin(); s != chunk.rend(); ++s) {
        if (step.weight) {
          add_segment_weights(*s, micro, last);
        } else {
          add_segment_backward(*s, micro, last && !split);
        }
      }
    }
  }

  // ZB-H1's W step of a segment: each layer with parameters, in reverse graph order; the
  // last micro-batch's starts the gradient buckets its layers close.
  void add_segment_weights(int32_t segment, int32_t micro, bool reduces) {
    const std::vector<graph::LayerId>& layers = program_.segments[static_cast<size_t>(segment)].layers;
    for (auto id = layers.rbegin(); id != layers.rend(); ++id) {
      if (graph_.info(*id).params == 0) continue;
      Op op;
      op.kind = OpKind::BackwardWeight;
      op.layer = *id;
      op.segment = segment;
      op.micro = micro;
      for (const cost::Shard& shard : program_.segments[static_cast<size_t>(segment)].shards) emit(shard.rank, op);
      if (!reduces) continue;
      for (const int32_t bucket : closes_[static_cast<size_t>(*id)]) emit_allreduce(*id, bucket);
    }
  }

  void add_segment_forward(int32_t segment, int32_t micro) {
    const PieceLists& activations = activation_pieces_[static_cast<size_t>(micro)];
    for (const graph::LayerId id : program_.segments[static_cast<size_t>(segment)].layers) {
      for (const auto& pieces : activations[static_cast<size_t>(id)]) {
        emit_pieces(pieces, OpKind::RecvActivation, OpKind::SendActivation, true);
      }
      emit_compute(segment, id, false, micro);
      for (const auto& [consumer, k] : uses_[static_cast<size_t>(id)]) {
        emit_pieces(activations[static_cast<size_t>(consumer)][k], OpKind::RecvActivation, OpKind::SendActivation,
                    false);
      }
    }
  }

  // `reduces`: the last micro-batch's backward, which starts the gradient buckets.
  void add_segment_backward(int32_t segment, int32_t micro, bool reduces) {
    const PieceLists& gradients = gradient_pieces_[static_cast<size_t>(micro)];
    const std::vector<graph::LayerId>& layers = program_.segments[static_cast<size_t>(segment)].layers;
    for (auto id = layers.rbegin(); id != layers.rend(); ++id) {
      for (const auto& [consumer, k] : uses_[static_cast<size_t>(*id)]) {
        emit_pieces(gradients[static_cast<size_t>(consumer)][k], OpKind::RecvGradient, OpKind::SendGradient, true);
      }
    }
    // The segment's backward is one autograd call: what it recomputes comes first.
    for (const graph::LayerId id : layers) {
      if (recomputed(id)) emit_recompute(segment, id, micro);
    }
    for (auto id = layers.rbegin(); id != layers.rend(); ++id) {
      emit_compute(segment, *id, true, micro);
      if (!reduces) continue;
      for (const int32_t bucket : closes_[static_cast<size_t>(*id)]) emit_allreduce(*id, bucket);
    }
    for (auto id = layers.rbegin(); id != layers.rend(); ++id) {
      for (const auto& pieces : gradients[static_cast<size_t>(*id)]) {
        emit_pieces(pieces, OpKind::RecvGradient, OpKind::SendGradient, false);
      }
    }
  }

  // A bucket's ALLREDUCE, on each rank of its group. A rank of another stage (one that
  // holds a tied embedding's weight for its head) starts it after its own last backward,
  // at the end of its stage's ops (add_step_end).
  void emit_allreduce(graph::LayerId closing, int32_t bucket) {
    Op op;
    op.kind = options_.zero_stage >= 1 ? OpKind::ReduceScatter : OpKind::AllReduce;
    op.layer = closing;
    op.bucket = bucket;
    const int32_t group = program_.buckets[static_cast<size_t>(bucket)].group;
    const int stage = plan_.stage_of(closing) % plan_.physical_stages();
    for (const int rank : program_.groups[static_cast<size_t>(group)]) {
      op.group = sharding_group(group, rank, &op.replica_group);
      if (rank_stage_[static_cast<size_t>(rank)] == stage) {
        emit(rank, op);
      } else {
        deferred_[static_cast<size_t>(rank)].push_back(op);
      }
    }
  }

  void add_step_end() {
    std::vector<char> updates(static_cast<size_t>(program_.ranks), 0);
    for (graph::LayerId id = 0; id < layer_count_; ++id) {
      if (graph_.info(id).params == 0) continue;
      for (const cost::Shard& shard : placement(id).shards) updates[static_cast<size_t>(shard.rank)] = 1;
      // A tied embedding's weight is updated on its heads' ranks too.
      for (const int rank : tied_group_[static_cast<size_t>(id)]) updates[static_cast<size_t>(rank)] = 1;
    }
    for (int rank = 0; rank < program_.ranks; ++rank) {
      if (scope_.one_rank_per_class && !built(rank)) continue;  // stands for none, or stood for
      std::vector<Op>& ops = program_.ops[static_cast<size_t>(rank)];
      const std::vector<Op>& deferred = deferred_[static_cast<size_t>(rank)];
      ops.insert(ops.end(), deferred.begin(), deferred.end());
      bool sends = false;
      std::vector<Op> waits, gathers;
      for (const Op& op : ops) {
        sends = sends || op.kind == OpKind::SendActivation || op.kind == OpKind::SendGradient;
        if (op.kind != OpKind::AllReduce && op.kind != OpKind::ReduceScatter) continue;
        Op wait = op;
        wait.kind = OpKind::WaitAllReduce;
        waits.push_back(wait);
        if (options_.zero_stage == 1 || options_.zero_stage == 2) {
          wait.kind = OpKind::AllGather;  // the updated shards of the bucket's weights
          gathers.push_back(wait);
        }
      }
      ops.insert(ops.end(), waits.begin(), waits.end());
      if (options_.clip_grad_norm > 0) {  // every rank, those without parameters too: a world sum
        Op clip{OpKind::ClipGradNorm};
        clip.group = world_group_;
        clip.bytes = sizeof(double);
        ops.push_back(clip);
      }
      if (updates[static_cast<size_t>(rank)]) ops.push_back(Op{OpKind::Update});
      ops.insert(ops.end(), gathers.begin(), gathers.end());
      if (scope_.reduce_loss) ops.push_back(Op{OpKind::ReduceLoss});
      if (sends) ops.push_back(Op{OpKind::WaitSends});
    }
  }

  const graph::Graph& graph_;
  const plan::Plan& plan_;
  const ProgramOptions& options_;
  const BuildScope& scope_;
  const graph::LayerId layer_count_;
  StepProgram program_;
  // By layer, by part: its gradient group (-1: one sample group, or nothing to sync); a
  // tied embedding's is its tied group.
  std::vector<std::vector<int32_t>> layer_groups_;
  std::map<graph::LayerId, std::map<int, int32_t>> expert_exchange_;  // moe layer -> rank -> its expert group
  std::map<graph::LayerId, std::vector<int32_t>> expert_replicas_;    // moe layer -> by expert slice (-1: one rank)
  std::vector<std::vector<int32_t>> tensor_groups_;  // by segment, by sample group (split segments)
  bool split_plan_ = false;                          // some layer has a tensor split
  std::vector<std::vector<int>> tied_group_;  // find_tied_groups
  std::vector<TensorCollectives> collectives_;  // by layer: find_tensor_collectives
  int32_t world_group_ = -1;                  // all ranks (clipping's norm), or -1
  // HSDP: by gradient group's ranks, its shard and replica groups (make_groups); then by
  // gradient group index, by rank: the indices of its shard and replica groups.
  struct HybridCut {
    std::vector<std::vector<int>> shards, replicas;
  };
  std::map<std::vector<int>, HybridCut> hybrid_ranks_;
  std::map<int32_t, std::map<int, std::pair<int32_t, int32_t>>> hybrid_;
  // Piece indices by [micro-batch][consumer][input position], ascending samples.
  using PieceLists = std::vector<std::vector<std::vector<int32_t>>>;
  std::vector<PieceLists> activation_pieces_;
  std::vector<PieceLists> gradient_pieces_;
  std::vector<int> rank_stage_;             // by rank: its stage (-1: holds no shard)
  std::vector<std::vector<Op>> deferred_;   // by rank: emit_allreduce's for its step end
  // By producer: each (consumer, input position) in another segment that reads it, in
  // graph order; a consumer reading it twice appears twice. Built once, so emitting a
  // layer's sends and gradient receives does not search every consumer's inputs.
  std::vector<std::vector<std::pair<graph::LayerId, size_t>>> uses_;
  std::vector<std::vector<int32_t>> closes_;  // by layer: the buckets its backward completes (one per part)
  std::vector<Bucket> pending_buckets_;
  uint32_t next_tag_ = 0;
  size_t fewest_sharing_;  // ranks a gradient or clipping group needs (2; 1 before a context lift)
  RecomputeUnits units_;  // under full recomputation; empty otherwise
};

}  // namespace

StepProgram build_step_program(const graph::Graph& graph, const plan::Plan& plan, const ProgramOptions& options,
                               const BuildScope& scope) {
  check_program_options(options);
  if (plan.context_parallel > 1) {
    const plan::Plan groups = context_group_plan(plan);
    return lift_context(graph, plan, options, scope,
                        ProgramBuilder(graph, groups, options, scope, plan.context_parallel).build());
  }
  return ProgramBuilder(graph, plan, options, scope).build();
}

}  // namespace burst::program
