// Re-shard math: hand-checked cases, order guarantees, validation, and a property test
// against a per-sample brute force.
#include <algorithm>
#include <map>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "burst/cost/reshard.h"
#include "burst/util/error.h"

namespace burst::cost {
namespace {

std::string reshard_error(const std::vector<Shard>& src, const std::vector<Shard>& dst) {
  try {
    reshard_transfers(src, dst);
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(Reshard, FourRanksOfFourOntoOneRank) {
  // Ranks 0-3 hold [0,4) [4,8) [8,12) [12,16); rank 0 then computes all 16 samples.
  // Rank 0 already has [0,4) (a local piece); ranks 1, 2, 3 each send their 4 samples.
  const std::vector<Shard> src{{0, {0, 4}}, {1, {4, 8}}, {2, {8, 12}}, {3, {12, 16}}};
  const std::vector<Shard> dst{{0, {0, 16}}};
  const std::vector<Transfer> expected{
      {0, 0, {0, 4}}, {1, 0, {4, 8}}, {2, 0, {8, 12}}, {3, 0, {12, 16}}};
  const std::vector<Transfer> transfers = reshard_transfers(src, dst);
  EXPECT_EQ(transfers, expected);
  EXPECT_TRUE(transfers[0].local());
  EXPECT_FALSE(transfers[1].local());

  // Volumes: rank 0 receives 3 x 4 = 12 samples over the network; ranks 1-3 send 4 each.
  std::map<int, int64_t> sent;
  std::map<int, int64_t> received;
  for (const Transfer& transfer : transfers) {
    if (transfer.local()) continue;
    sent[transfer.src_rank] += transfer.samples.size();
    received[transfer.dst_rank] += transfer.samples.size();
  }
  EXPECT_EQ(received, (std::map<int, int64_t>{{0, 12}}));
  EXPECT_EQ(sent, (std::map<int, int64_t>{{1, 4}, {2, 4}, {3, 4}}));

  // Backward, the same placements swapped: rank 0 scatters the gradient back.
  EXPECT_EQ(reshard_transfers(dst, src),
            (std::vector<Transfer>{{0, 0, {0, 4}}, {0, 1, {4, 8}}, {0, 2, {8, 12}}, {0, 3, {12, 16}}}));
}

TEST(Reshard, ThreeUnevenRanksOntoTwo) {
  // Source: rank 0 [0,5), rank 1 [5,10), rank 2 [10,16). Destination: rank 0 [0,8),
  // rank 1 [8,16). Destination rank 0 keeps [0,5) and gets [5,8) from rank 1; destination
  // rank 1 keeps [8,10) (it held [5,10)) and gets [10,16) from rank 2.
  const std::vector<Shard> src{{0, {0, 5}}, {1, {5, 10}}, {2, {10, 16}}};
  const std::vector<Shard> dst{{0, {0, 8}}, {1, {8, 16}}};
  EXPECT_EQ(reshard_transfers(src, dst),
            (std::vector<Transfer>{{0, 0, {0, 5}}, {1, 0, {5, 8}}, {1, 1, {8, 10}}, {2, 1, {10, 16}}}));
}

TEST(Reshard, OrderFollowsTheCallersShardOrder) {
  // The same placements as above, listed out of sample order: pieces come by destination
  // shard as listed (rank 1's first), and within one destination by source shard as listed
  // (rank 2 before rank 1).
  const std::vector<Shard> src{{2, {10, 16}}, {0, {0, 5}}, {1, {5, 10}}};
  const std::vector<Shard> dst{{1, {8, 16}}, {0, {0, 8}}};
  EXPECT_EQ(reshard_transfers(src, dst),
            (std::vector<Transfer>{{2, 1, {10, 16}}, {1, 1, {8, 10}}, {0, 0, {0, 5}}, {1, 0, {5, 8}}}));
}

TEST(Reshard, SamePlacementIsAllLocal) {
  const std::vector<Shard> placement{{3, {0, 7}}, {5, {7, 9}}};
  const std::vector<Transfer> transfers = reshard_transfers(placement, placement);
  EXPECT_EQ(transfers, (std::vector<Transfer>{{3, 3, {0, 7}}, {5, 5, {7, 9}}}));
  EXPECT_TRUE(std::all_of(transfers.begin(), transfers.end(), [](const Transfer& t) { return t.local(); }));
}

TEST(Reshard, BadPlacementsAreNamed) {
  const std::vector<Shard> good{{0, {0, 8}}};
  EXPECT_EQ(reshard_error({}, good), "re-shard source: the placement has no shards");
  EXPECT_EQ(reshard_error(good, {{0, {0, 3}}, {1, {4, 8}}}),
            "re-shard destination: samples [3, 4) are not held by any rank");
  EXPECT_EQ(reshard_error({{0, {1, 8}}}, good), "re-shard source: samples [0, 1) are not held by any rank");
  EXPECT_EQ(reshard_error({{0, {0, 5}}, {1, {4, 8}}}, good),
            "re-shard source: samples [4, 5) are held by both rank 0 and rank 1");
  EXPECT_EQ(reshard_error({{0, {0, 8}}, {1, {2, 4}}}, good),
            "re-shard source: samples [2, 4) are held by both rank 0 and rank 1");
  EXPECT_EQ(reshard_error({{0, {0, 4}}, {0, {4, 8}}}, good),
            "re-shard source: rank 0 has two shards, [0, 4) and [4, 8) (one contiguous range per "
            "rank)");
  EXPECT_EQ(reshard_error({{-1, {0, 8}}}, good), "re-shard source: rank -1 is negative");
  EXPECT_EQ(reshard_error({{0, {0, 4}}, {1, {4, 4}}, {2, {4, 8}}}, good),
            "re-shard source: rank 1 holds [4, 4), which is not a non-empty range of samples >= 0");
  EXPECT_EQ(reshard_error({{0, {-2, 8}}}, good),
            "re-shard source: rank 0 holds [-2, 8), which is not a non-empty range of samples >= 0");
  EXPECT_EQ(reshard_error(good, {{0, {0, 6}}}),
            "re-shard: the source placement covers 8 samples but the destination covers 6");
}

// A random placement of `batch` samples: `shards` contiguous non-empty pieces, on distinct
// ranks drawn from 0..15, listed in a random order.
std::vector<Shard> random_placement(int64_t batch, int shards, std::mt19937& random) {
  std::vector<int64_t> cuts(static_cast<size_t>(batch - 1));
  std::iota(cuts.begin(), cuts.end(), int64_t{1});
  std::shuffle(cuts.begin(), cuts.end(), random);
  cuts.resize(static_cast<size_t>(shards - 1));
  cuts.push_back(0);
  cuts.push_back(batch);
  std::sort(cuts.begin(), cuts.end());
  std::vector<int> ranks(16);
  std::iota(ranks.begin(), ranks.end(), 0);
  std::shuffle(ranks.begin(), ranks.end(), random);
  std::vector<Shard> placement;
  for (int i = 0; i < shards; ++i) {
    placement.push_back(Shard{ranks[static_cast<size_t>(i)], {cuts[static_cast<size_t>(i)], cuts[static_cast<size_t>(i) + 1]}});
  }
  std::shuffle(placement.begin(), placement.end(), random);
  return placement;
}

// The rank holding each sample, by brute force.
std::vector<int> owner_of_each_sample(const std::vector<Shard>& placement, int64_t batch) {
  std::vector<int> owner(static_cast<size_t>(batch), -1);
  for (const Shard& shard : placement) {
    for (int64_t s = shard.samples.begin; s < shard.samples.end; ++s) owner[static_cast<size_t>(s)] = shard.rank;
  }
  return owner;
}

// Long: one randomised property check, its generator and its
// brute-force count side by side.
TEST(Reshard, PropertyEveryDestinationSampleArrivesExactlyOnce) {
  std::mt19937 random(20220901);
  for (int trial = 0; trial < 500; ++trial) {
    const int64_t batch = std::uniform_int_distribution<int64_t>(1, 96)(random);
    const int max_shards = static_cast<int>(std::min<int64_t>(batch, 16));
    const int src_count = std::uniform_int_distribution<int>(1, max_shards)(random);
    const int dst_count = std::uniform_int_distribution<int>(1, max_shards)(random);
    const std::vector<Shard> src = random_placement(batch, src_count, random);
    const std::vector<Shard> dst = random_placement(batch, dst_count, random);
    SCOPED_TRACE(::testing::Message() << "trial " << trial << ": batch " << batch << ", "
                                      << src_count << " -> " << dst_count << " shards");

    const std::vector<Transfer> transfers = reshard_transfers(src, dst);
    EXPECT_EQ(transfers, reshard_transfers(src, dst));  // deterministic

    const std::vector<int> src_owner = owner_of_each_sample(src, batch);
    const std::vector<int> dst_owner = owner_of_each_sample(dst, batch);
    std::vector<int> received(static_cast<size_t>(batch), 0);
    std::map<std::pair<int, int>, int64_t> volume;  // (src, dst) -> samples
    int64_t network_samples = 0;
    for (const Transfer& transfer : transfers) {
      ASSERT_GT(transfer.samples.size(), 0);
      for (int64_t s = transfer.samples.begin; s < transfer.samples.end; ++s) {
        ASSERT_EQ(src_owner[static_cast<size_t>(s)], transfer.src_rank);  // the sender holds it
        ASSERT_EQ(dst_owner[static_cast<size_t>(s)], transfer.dst_rank);  // the receiver needs it
        ++received[static_cast<size_t>(s)];
      }
      volume[{transfer.src_rank, transfer.dst_rank}] += transfer.samples.size();
      if (!transfer.local()) network_samples += transfer.samples.size();
    }
    EXPECT_TRUE(std::all_of(received.begin(), received.end(), [](int count) { return count == 1; }));

    // Volumes per (sender, receiver) pair and over the network agree with the brute force.
    std::map<std::pair<int, int>, int64_t> expected_volume;
    int64_t expected_network = 0;
    for (int64_t s = 0; s < batch; ++s) {
      const int from = src_owner[static_cast<size_t>(s)];
      const int to = dst_owner[static_cast<size_t>(s)];
      ++expected_volume[{from, to}];
      if (from != to) ++expected_network;
    }
    EXPECT_EQ(volume, expected_volume);
    EXPECT_EQ(network_samples, expected_network);
    // One transfer per overlapping (source shard, destination shard) pair: ranks are
    // distinct within a placement, so no pair appears twice.
    EXPECT_EQ(transfers.size(), expected_volume.size());

    // Order: destination shards as listed, then source shards as listed.
    const auto index_of = [](const std::vector<Shard>& placement, int rank) {
      for (size_t i = 0; i < placement.size(); ++i) {
        if (placement[i].rank == rank) return i;
      }
      return placement.size();
    };
    for (size_t i = 1; i < transfers.size(); ++i) {
      const size_t dst_before = index_of(dst, transfers[i - 1].dst_rank);
      const size_t dst_now = index_of(dst, transfers[i].dst_rank);
      ASSERT_LE(dst_before, dst_now);
      if (dst_before == dst_now) {
        ASSERT_LT(index_of(src, transfers[i - 1].src_rank), index_of(src, transfers[i].src_rank));
      }
    }
  }
}

}  // namespace
}  // namespace burst::cost
