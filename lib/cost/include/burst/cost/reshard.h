#pragma once
// Re-shard math: which sample ranges move from which rank to which when one layer's
// placement hands its output (or, backward, its input gradient) to the next layer's.
//
// A pure function of the two placements, evaluated identically on every rank, so all ranks
// derive the same transfers in the same order without talking to each other (the runtime
// relies on that order to match sends with receives; see docs/architecture.md, invariant 3).
#include <cstdint>
#include <vector>

namespace burst::cost {

// Samples [begin, end) of the global batch.
struct SampleRange {
  int64_t begin = 0;
  int64_t end = 0;

  int64_t size() const { return end - begin; }
  bool operator==(const SampleRange& other) const { return begin == other.begin && end == other.end; }
  bool operator!=(const SampleRange& other) const { return !(*this == other); }
};

// The samples one rank holds in a placement.
struct Shard {
  int rank = 0;
  SampleRange samples;
};

// One piece of a re-shard: `samples` go from src_rank to dst_rank.
struct Transfer {
  int src_rank = 0;
  int dst_rank = 0;
  SampleRange samples;

  // A piece the rank already holds: the runtime copies it in memory (or uses it in
  // place), the network model charges nothing for it.
  bool local() const { return src_rank == dst_rank; }
  bool operator==(const Transfer& other) const {
    return src_rank == other.src_rank && dst_rank == other.dst_rank && samples == other.samples;
  }
  bool operator!=(const Transfer& other) const { return !(*this == other); }
};

// The transfers that turn placement `src` into placement `dst`.
//
// Both placements must cover the same batch [0, B) exactly once, each with non-empty
// ranges, non-negative ranks and at most one shard per rank; shards may be listed in any
// order. Otherwise throws UserError naming the side and the problem ("re-shard source:
// samples [4, 6) are held by both rank 1 and rank 2").
//
// Result: for each destination shard in the order given, the non-empty intersections with
// the source shards, in the order the source shards are given. Local pieces (src_rank ==
// dst_rank) are included, marked by Transfer::local(), so the transfers together deliver
// every destination sample exactly once. Pieces are never merged or split further: one
// transfer per overlapping (source shard, destination shard) pair.
std::vector<Transfer> reshard_transfers(const std::vector<Shard>& src, const std::vector<Shard>& dst);

}  // namespace burst::cost
