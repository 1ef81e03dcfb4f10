#include "burst/program/tensor_collectives.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace burst::program {
namespace {

using cost::SplitKind;

class GroupSplits {
 public:
  GroupSplits(const std::vector<cost::TensorSplit>& splits, const SameTensorGroup& same_group)
      : splits_(splits), same_group_(same_group) {}

  const cost::TensorSplit& split(graph::LayerId id) const { return splits_[static_cast<size_t>(id)]; }
  bool sequence(graph::LayerId id) const { return split(id).splits() && split(id).kind == SplitKind::Sequence; }
  // Whether `other` is a sequence split in `id`'s group.
  bool sequence_in_group(graph::LayerId id, graph::LayerId other) const {
    return sequence(other) && same_group_(id, other);
  }
  // Whether `reader` is a column or heads split in `id`'s group (its input gradient a partial sum).
  bool summing_reader(graph::LayerId id, graph::LayerId reader) const {
    return split(reader).splits() && cost::sums_input_gradient(split(reader).kind) && same_group_(id, reader);
  }
  bool same_group(graph::LayerId a, graph::LayerId b) const { return same_group_(a, b); }

 private:
  const std::vector<cost::TensorSplit>& splits_;
  const SameTensorGroup& same_group_;
};

}  // namespace

TensorCollectives tensor_collectives(const graph::Graph& graph, const std::vector<cost::TensorSplit>& splits,
                                     const SameTensorGroup& same_group, graph::LayerId id) {
  TensorCollectives collectives;
  const GroupSplits group(splits, same_group);
  const cost::TensorSplit& split = group.split(id);
  if (!split.splits()) return collectives;
  const std::vector<graph::LayerId>& readers = graph.consumers(id);
  const auto sequence_reader = [&](graph::LayerId reader) { return group.sequence_in_group(id, reader); };
  const bool gradient = carries_gradient(graph, id);
  if (cost::sums_output(split.kind)) {
    const bool scattered = !readers.empty() && std::all_of(readers.begin(), readers.end(), sequence_reader);
    collectives.after_forward = scattered ? OpKind::TensorReduceScatter : OpKind::TensorAllReduce;
  }
  if (group.sequence(id)) {
    if (!std::all_of(readers.begin(), readers.end(), sequence_reader)) collectives.after_forward = OpKind::TensorAllGather;
    const bool summed = std::any_of(readers.begin(), readers.end(),
                                    [&](graph::LayerId reader) { return group.summing_reader(id, reader); });
    if (gradient && summed) collectives.before_backward = OpKind::TensorReduceScatter;
    for (const graph::LayerId input : graph.inputs(id)) {
      if (carries_gradient(graph, input) && !group.same_group(id, input)) {
        collectives.after_backward = OpKind::TensorAllGather;
        collectives.input = input;
        break;
      }
    }
  } else if (gradient && std::any_of(readers.begin(), readers.end(), sequence_reader)) {
    collectives.before_backward = OpKind::TensorAllGather;
  }
  if (cost::sums_input_gradient(split.kind)) {
    const graph::LayerId input = graph.inputs(id).at(0);
    if (carries_gradient(graph, input) && !group.sequence_in_group(id, input)) {
      collectives.after_backward = OpKind::TensorAllReduce;
      collectives.input = input;
    }
  }
  return collectives;
}

SameTensorGroup program_tensor_groups(const StepProgram& program) {
  // Each segment's class: the first segment on the same shards.
  std::vector<int32_t> class_of(program.segments.size());
  std::map<std::vector<std::tuple<int, int64_t, int64_t>>, int32_t> first_on;  // by (rank, samples) of each shard
  for (size_t s = 0; s < program.segments.size(); ++s) {
    std::vector<std::tuple<int, int64_t, int64_t>> key;
    key.reserve(program.segments[s].shards.size());
    for (const cost::Shard& shard : program.segments[s].shards) key.emplace_back(shard.rank, shard.samples.begin, shard.samples.end);
    class_of[s] = first_on.emplace(std::move(key), static_cast<int32_t>(s)).first->second;
  }
  return [class_of = std::move(class_of), &program](graph::LayerId a, graph::LayerId b) {
    return class_of[static_cast<size_t>(program.segment_of[static_cast<size_t>(a)])] ==
           class_of[static_cast<size_t>(program.segment_of[static_cast<size_t>(b)])];
  };
}

}  // namespace burst::program
