// Block re-shards (tensor splits): hand-checked cases, copies, validation, and a property
// test against a per-element brute force.
#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "burst/cost/reshard.h"
#include "burst/util/error.h"

namespace burst::cost {
namespace {

Block block(int rank, int64_t s0, int64_t s1, int64_t f0, int64_t f1) { return Block{rank, {s0, s1}, {f0, f1}}; }
BlockTransfer piece(int from, int to, int64_t s0, int64_t s1, int64_t f0, int64_t f1) {
  return BlockTransfer{from, to, {s0, s1}, {f0, f1}};
}

std::string block_error(const std::vector<Block>& src, const std::vector<Block>& dst) {
  try {
    block_transfers(src, dst);
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(BlockTransfers, SampleSplitIntoAColumnSplitSendsEveryPartTheWholeInput) {
  // Ranks 0 and 1 hold samples [0,4) and [4,8), all 8 features. A column split on ranks 2
  // and 3 (one group of 2 parts) needs the whole input [0,8) x [0,8) on both parts: each
  // part receives both halves, 4 pieces.
  const std::vector<Block> src{block(0, 0, 4, 0, 8), block(1, 4, 8, 0, 8)};
  const std::vector<Block> dst{block(2, 0, 8, 0, 8), block(3, 0, 8, 0, 8)};
  const std::vector<BlockTransfer> expected{piece(0, 2, 0, 4, 0, 8), piece(1, 2, 4, 8, 0, 8),
                                            piece(0, 3, 0, 4, 0, 8), piece(1, 3, 4, 8, 0, 8)};
  EXPECT_EQ(block_transfers(src, dst), expected);
}

TEST(BlockTransfers, ColumnSlicesIntoWholeFeaturesAreAnAllGather) {
  // A column split's output on ranks 0 and 1: features [0,4) and [4,8) of samples [0,4).
  // A layer on both ranks that needs whole features: each keeps its own slice (local) and
  // receives the other: an all-gather.
  const std::vector<Block> src{block(0, 0, 4, 0, 4), block(1, 0, 4, 4, 8)};
  const std::vector<Block> dst{block(0, 0, 4, 0, 8), block(1, 0, 4, 0, 8)};
  const std::vector<BlockTransfer> expected{piece(0, 0, 0, 4, 0, 4), piece(1, 0, 0, 4, 4, 8),
                                            piece(0, 1, 0, 4, 0, 4), piece(1, 1, 0, 4, 4, 8)};
  const std::vector<BlockTransfer> transfers = block_transfers(src, dst);
  EXPECT_EQ(transfers, expected);
  EXPECT_EQ(std::count_if(transfers.begin(), transfers.end(), [](const BlockTransfer& t) { return !t.local(); }), 2);
}

TEST(BlockTransfers, ColumnThenRowOnTheSameRanksIsAllLocal) {
  // Megatron's pairing: the column split's slices are exactly what the row split's parts
  // read, two sample groups of two parts: nothing crosses a rank.
  const std::vector<Block> column{block(0, 0, 2, 0, 6), block(1, 0, 2, 6, 12), block(2, 2, 4, 0, 6),
                                  block(3, 2, 4, 6, 12)};
  const std::vector<BlockTransfer> transfers = block_transfers(column, column);
  ASSERT_EQ(transfers.size(), 4U);
  for (const BlockTransfer& t : transfers) EXPECT_TRUE(t.local());
}

TEST(BlockTransfers, CopiesShareTheSendingAndPreferTheirOwnRank) {
  // A replicated output (or a row split's summed one): ranks 0 and 1 both hold all of
  // [0,4) x [0,8). Rank 1 needs it: its own copy. Ranks 2 and 3 take it from holder
  // (rank mod 2): rank 0 and rank 1.
  const std::vector<Block> src{block(0, 0, 4, 0, 8), block(1, 0, 4, 0, 8)};
  const std::vector<Block> dst{block(1, 0, 4, 0, 8), block(2, 0, 2, 0, 8), block(3, 2, 4, 0, 8)};
  const std::vector<BlockTransfer> expected{piece(1, 1, 0, 4, 0, 8), piece(0, 2, 0, 2, 0, 8), piece(1, 3, 2, 4, 0, 8)};
  EXPECT_EQ(block_transfers(src, dst), expected);
}

TEST(BlockTransfers, RefusesSourcesThatDoNotTileTheGrid) {
  EXPECT_EQ(block_error({block(0, 0, 4, 0, 4)}, {}), "(no error)");
  EXPECT_NE(block_error({block(0, 0, 4, 0, 4), block(1, 0, 4, 2, 8)}, {}).find("overlaps or leaves a gap"),
            std::string::npos);
  EXPECT_NE(block_error({block(0, 0, 4, 0, 8), block(1, 2, 6, 0, 8)}, {}).find("samples [2, 4) are cut two ways"),
            std::string::npos);
  EXPECT_NE(block_error({block(0, 0, 4, 0, 8), block(1, 6, 8, 0, 8)}, {}).find("samples [4, 6) are held by no rank"),
            std::string::npos);
  EXPECT_NE(block_error({block(0, 0, 4, 0, 8), block(1, 4, 8, 0, 4)}, {}).find("features [0, 4), others [0, 8)"),
            std::string::npos);
  EXPECT_NE(block_error({block(0, 0, 4, 0, 4), block(0, 0, 4, 4, 8)}, {}).find("rank 0 has two blocks"),
            std::string::npos);
  EXPECT_NE(block_error({block(0, 0, 4, 0, 8)}, {block(1, 0, 4, 0, 9)}).find("outside samples [0, 4) x features [0, 8)"),
            std::string::npos);
}

// Random grids: b sample bands, each cut into k feature slices held by 1-3 ranks each.
std::vector<Block> random_source(std::mt19937& random, int64_t batch, int64_t features, int& next_rank) {
  std::vector<Block> blocks;
  int64_t s0 = 0;
  while (s0 < batch) {
    const int64_t s1 = std::min<int64_t>(batch, s0 + 1 + static_cast<int64_t>(random() % 5));
    int64_t f0 = 0;
    while (f0 < features) {
      const int64_t f1 = std::min<int64_t>(features, f0 + 1 + static_cast<int64_t>(random() % 4));
      const int copies = 1 + static_cast<int>(random() % 3);
      for (int c = 0; c < copies; ++c) blocks.push_back(block(next_rank++, s0, s1, f0, f1));
      f0 = f1;
    }
    s0 = s1;
  }
  std::shuffle(blocks.begin(), blocks.end(), random);
  return blocks;
}

TEST(BlockTransfers, PropertyEveryDestinationElementArrivesOnceFromAHolder) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t batch = 1 + static_cast<int64_t>(random() % 12);
    const int64_t features = 1 + static_cast<int64_t>(random() % 9);
    int next_rank = 0;
    const std::vector<Block> src = random_source(random, batch, features, next_rank);
    // Distinct destination ranks (pieces are told apart by their destination): some are
    // ranks of the source (local pieces), some are new.
    std::vector<int> ranks(static_cast<size_t>(std::max(next_rank + 4, 6)));
    std::iota(ranks.begin(), ranks.end(), 0);
    std::shuffle(ranks.begin(), ranks.end(), random);
    std::vector<Block> dst;
    for (size_t i = 0; i < 6; ++i) {
      const int64_t s0 = static_cast<int64_t>(random() % static_cast<uint64_t>(batch));
      const int64_t s1 = s0 + 1 + static_cast<int64_t>(random() % static_cast<uint64_t>(batch - s0));
      const int64_t f0 = static_cast<int64_t>(random() % static_cast<uint64_t>(features));
      const int64_t f1 = f0 + 1 + static_cast<int64_t>(random() % static_cast<uint64_t>(features - f0));
      dst.push_back(block(ranks[i], s0, s1, f0, f1));
    }
    const std::vector<BlockTransfer> transfers = block_transfers(src, dst);
    // Per destination (in order), count each element it receives; check the sender holds it.
    size_t t = 0;
    for (const Block& to : dst) {
      std::multiset<std::pair<int64_t, int64_t>> got;
      for (; t < transfers.size() && transfers[t].dst_rank == to.rank; ++t) {
        const BlockTransfer& tr = transfers[t];
        const bool held = std::any_of(src.begin(), src.end(), [&](const Block& b) {
          return b.rank == tr.src_rank && b.samples.begin <= tr.samples.begin && tr.samples.end <= b.samples.end &&
                 b.features.begin <= tr.features.begin && tr.features.end <= b.features.end;
        });
        ASSERT_TRUE(held) << "trial " << trial;
        for (int64_t s = tr.samples.begin; s < tr.samples.end; ++s) {
          for (int64_t f = tr.features.begin; f < tr.features.end; ++f) got.insert({s, f});
        }
        // A rank that holds the element itself never receives it from another rank.
        if (!tr.local()) {
          ASSERT_FALSE(std::any_of(src.begin(), src.end(), [&](const Block& b) {
            return b.rank == to.rank && b.samples.begin <= tr.samples.begin && tr.samples.end <= b.samples.end &&
                   b.features.begin <= tr.features.begin && tr.features.end <= b.features.end;
          })) << "trial " << trial;
        }
      }
      std::multiset<std::pair<int64_t, int64_t>> want;
      for (int64_t s = to.samples.begin; s < to.samples.end; ++s) {
        for (int64_t f = to.features.begin; f < to.features.end; ++f) want.insert({s, f});
      }
      ASSERT_EQ(got, want) << "trial " << trial;
    }
    ASSERT_EQ(t, transfers.size());
  }
}

TEST(BlockTransfers, PropertyWithoutCopiesOrFeatureSplitsTheyAreTheSampleReshard) {
  std::mt19937 random(11);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t batch = 1 + static_cast<int64_t>(random() % 16);
    const auto cut = [&](int first_rank) {
      std::vector<Shard> shards;
      int64_t begin = 0;
      int rank = first_rank;
      while (begin < batch) {
        const int64_t end = std::min<int64_t>(batch, begin + 1 + static_cast<int64_t>(random() % 6));
        shards.push_back(Shard{rank++, {begin, end}});
        begin = end;
      }
      std::shuffle(shards.begin(), shards.end(), random);
      return shards;
    };
    const std::vector<Shard> src = cut(0);
    const std::vector<Shard> dst = cut(static_cast<int>(random() % 3));
    const auto blocks = [](const std::vector<Shard>& shards) {
      std::vector<Block> out;
      for (const Shard& shard : shards) out.push_back(Block{shard.rank, shard.samples, {0, 5}});
      return out;
    };
    std::vector<Transfer> expected = reshard_transfers(src, dst);
    // reshard_transfers orders a destination's pieces by source order; blocks by samples.
    for (size_t begin = 0; begin < expected.size();) {
      size_t end = begin;
      while (end < expected.size() && expected[end].dst_rank == expected[begin].dst_rank) ++end;
      std::sort(expected.begin() + static_cast<std::ptrdiff_t>(begin), expected.begin() + static_cast<std::ptrdiff_t>(end),
                [](const Transfer& a, const Transfer& b) { return a.samples.begin < b.samples.begin; });
      begin = end;
    }
    std::vector<Transfer> got;
    for (const BlockTransfer& t : block_transfers(blocks(src), blocks(dst))) {
      ASSERT_EQ(t.features, (FeatureRange{0, 5}));
      got.push_back(Transfer{t.src_rank, t.dst_rank, t.samples});
    }
    ASSERT_EQ(got, expected) << "trial " << trial;
  }
}

}  // namespace
}  // namespace burst::cost
