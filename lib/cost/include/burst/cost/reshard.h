#pragma once
// Re-shard math: which sample ranges move from which rank to which when one layer's
// placement hands its output (or, backward, its input gradient) to the next layer's.
//
// A pure function of the two placements, evaluated identically on every rank, so all ranks
// derive the same transfers in the same order without talking to each other (the runtime
// relies on that order to match sends with receives; see docs/architecture.md, invariant 3).
#include <cstdint>
#include <vector>

#include "burst/cost/tensor_split.h"

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

// Re-sharding with tensor splits (tensor_split.h): an activation is a grid of samples x
// features, and a rank holds (or needs) one block of it. Several ranks may hold equal
// blocks (copies: a replicated layer, or a whole output after a row split's all-reduce).
struct Block {
  int rank = 0;
  SampleRange samples;
  FeatureRange features;
};

// One piece of a block re-shard: samples x features go from src_rank to dst_rank.
struct BlockTransfer {
  int src_rank = 0;
  int dst_rank = 0;
  SampleRange samples;
  FeatureRange features;

  bool local() const { return src_rank == dst_rank; }
  bool operator==(const BlockTransfer& other) const {
    return src_rank == other.src_rank && dst_rank == other.dst_rank && samples == other.samples &&
           features == other.features;
  }
};

// The pieces that give every destination block its elements, each exactly once.
//
// The distinct source blocks (equal blocks count once, whoever holds them) must tile
// samples [0, B) x features [0, F) exactly once, non-empty, at most one block per rank;
// destination blocks must be non-empty and inside that grid, and may repeat (every copy is
// delivered). Otherwise throws UserError naming the side and the problem.
//
// For each destination block in the order given, for each distinct source block overlapping
// it (ordered by samples, then features), one piece of the overlap from one holder: the
// destination's own rank when it holds that block (a local piece), otherwise holder number
// (destination rank mod holders) in the order the holders are given, so copies share the
// sending and every rank derives the same pieces. Without copies and with whole features on
// both sides, the pieces are reshard_transfers' (in destination order; within a destination
// by first sample).
std::vector<BlockTransfer> block_transfers(const std::vector<Block>& src, const std::vector<Block>& dst);

}  // namespace burst::cost
