#include "burst/cost/reshard.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::cost {
namespace {

std::string range_text(int64_t begin, int64_t end) { return fmt::format("[{}, {})", begin, end); }

// Checks that `shards` cover [0, B) exactly once and returns the shard indices ordered by
// their first sample. `side` names the placement in errors ("re-shard source").
std::vector<size_t> check_placement(const std::vector<Shard>& shards, const char* side) {
  if (shards.empty()) throw UserError(fmt::format("{}: the placement has no shards", side));
  std::unordered_map<int, size_t> shard_of_rank;
  for (size_t i = 0; i < shards.size(); ++i) {
    const Shard& shard = shards[i];
    if (shard.rank < 0) throw UserError(fmt::format("{}: rank {} is negative", side, shard.rank));
    if (shard.samples.begin < 0 || shard.samples.end <= shard.samples.begin) {
      throw UserError(fmt::format("{}: rank {} holds {}, which is not a non-empty range of "
                                  "samples >= 0", side, shard.rank,
                                  range_text(shard.samples.begin, shard.samples.end)));
    }
    const auto [previous, inserted] = shard_of_rank.emplace(shard.rank, i);
    if (!inserted) {
      const SampleRange& other = shards[previous->second].samples;
      throw UserError(fmt::format("{}: rank {} has two shards, {} and {} (one contiguous range "
                                  "per rank)", side, shard.rank, range_text(other.begin, other.end),
                                  range_text(shard.samples.begin, shard.samples.end)));
    }
  }
  std::vector<size_t> order(shards.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return shards[a].samples.begin < shards[b].samples.begin;
  });
  int64_t covered = 0;  // samples [0, covered) are held by exactly one shard so far
  for (size_t k = 0; k < order.size(); ++k) {
    const Shard& shard = shards[order[k]];
    if (shard.samples.begin > covered) {
      throw UserError(fmt::format("{}: samples {} are not held by any rank", side,
                                  range_text(covered, shard.samples.begin)));
    }
    if (shard.samples.begin < covered) {
      const Shard& before = shards[order[k - 1]];  // k > 0: covered starts at 0
      throw UserError(fmt::format("{}: samples {} are held by both rank {} and rank {}", side,
                                  range_text(shard.samples.begin, std::min(covered, shard.samples.end)),
                                  before.rank, shard.rank));
    }
    covered = shard.samples.end;
  }
  return order;
}

}  // namespace

std::vector<Transfer> reshard_transfers(const std::vector<Shard>& src, const std::vector<Shard>& dst) {
  const std::vector<size_t> src_order = check_placement(src, "re-shard source");
  const std::vector<size_t> dst_order = check_placement(dst, "re-shard destination");
  const int64_t src_batch = src[src_order.back()].samples.end;
  const int64_t dst_batch = dst[dst_order.back()].samples.end;
  if (src_batch != dst_batch) {
    throw UserError(fmt::format("re-shard: the source placement covers {} samples but the "
                                "destination covers {}", src_batch, dst_batch));
  }

  // Source shards sorted by first sample are also sorted by last sample (they are
  // disjoint), so the ones overlapping a destination range are a contiguous run found by
  // binary search. Each run is then put back in the caller's source order.
  std::vector<Transfer> transfers;
  std::vector<size_t> overlapping;
  for (const Shard& to : dst) {
    const auto first = std::partition_point(src_order.begin(), src_order.end(), [&](size_t i) {
      return src[i].samples.end <= to.samples.begin;
    });
    overlapping.clear();
    for (auto it = first; it != src_order.end() && src[*it].samples.begin < to.samples.end; ++it) {
      overlapping.push_back(*it);
    }
    std::sort(overlapping.begin(), overlapping.end());
    for (const size_t i : overlapping) {
      const Shard& from = src[i];
      transfers.push_back(Transfer{from.rank, to.rank,
                                   SampleRange{std::max(from.samples.begin, to.samples.begin),
                                               std::min(from.samples.end, to.samples.end)}});
    }
  }
  return transfers;
}

namespace {

std::string block_text(const SampleRange& samples, const FeatureRange& features) {
  return fmt::format("samples {} x features {}", range_text(samples.begin, samples.end),
                     range_text(features.begin, features.end));
}

// The distinct blocks of a source, grouped in bands of equal sample ranges: bands ascend
// and tile [0, batch), and each band's feature ranges ascend and tile [0, features).
struct SourceGrid {
  struct Distinct {
    FeatureRange features;
    std::vector<int> holders;  // in the order given
  };
  struct Band {
    SampleRange samples;
    std::vector<Distinct> blocks;  // features ascending
  };
  std::vector<Band> bands;
  int64_t batch = 0;
  int64_t features = 0;
};

SourceGrid source_grid(const std::vector<Block>& src) {
  const char* side = "re-shard source";
  if (src.empty()) throw UserError(fmt::format("{}: the placement has no blocks", side));
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, std::vector<int>> holders;
  std::unordered_map<int, size_t> block_of_rank;
  for (size_t i = 0; i < src.size(); ++i) {
    const Block& block = src[i];
    if (block.rank < 0) throw UserError(fmt::format("{}: rank {} is negative", side, block.rank));
    if (block.samples.begin < 0 || block.samples.size() <= 0 || block.features.begin < 0 ||
        block.features.size() <= 0) {
      throw UserError(fmt::format("{}: rank {} holds {}, which is empty or negative", side, block.rank,
                                  block_text(block.samples, block.features)));
    }
    if (!block_of_rank.emplace(block.rank, i).second) {
      throw UserError(fmt::format("{}: rank {} has two blocks (one per rank)", side, block.rank));
    }
    holders[{block.samples.begin, block.samples.end, block.features.begin, block.features.end}].push_back(block.rank);
  }
  SourceGrid grid;
  for (const auto& [key, ranks] : holders) {  // ascending samples, then features
    const auto& [s0, s1, f0, f1] = key;
    if (grid.bands.empty() || grid.bands.back().samples != SampleRange{s0, s1}) {
      if (s0 != grid.batch) {
        throw UserError(fmt::format("{}: samples {} are {}", side, range_text(std::min(s0, grid.batch), std::max(s0, grid.batch)),
                                    s0 > grid.batch ? "held by no rank" : "cut two ways"));
      }
      grid.bands.push_back(SourceGrid::Band{{s0, s1}, {}});
      grid.batch = s1;
    }
    SourceGrid::Band& band = grid.bands.back();
    const int64_t next = band.blocks.empty() ? 0 : band.blocks.back().features.end;
    if (f0 != next) {
      throw UserError(fmt::format("{}: {} overlaps or leaves a gap before it", side, block_text({s0, s1}, {f0, f1})));
    }
    band.blocks.push_back(SourceGrid::Distinct{{f0, f1}, ranks});
  }
  grid.features = grid.bands.front().blocks.back().features.end;
  for (const SourceGrid::Band& band : grid.bands) {
    if (band.blocks.back().features.end != grid.features) {
      throw UserError(fmt::format("{}: samples {} hold features [0, {}), others [0, {})", side,
                                  range_text(band.samples.begin, band.samples.end), band.blocks.back().features.end,
                                  grid.features));
    }
  }
  return grid;
}

}  // namespace

std::vector<BlockTransfer> block_transfers(const std::vector<Block>& src, const std::vector<Block>& dst) {
  const SourceGrid grid = source_grid(src);
  std::vector<BlockTransfer> transfers;
  for (const Block& to : dst) {
    if (to.rank < 0 || to.samples.begin < 0 || to.samples.size() <= 0 || to.samples.end > grid.batch ||
        to.features.begin < 0 || to.features.size() <= 0 || to.features.end > grid.features) {
      throw UserError(fmt::format("re-shard destination: rank {} needs {}, outside samples [0, {}) x features [0, {})",
                                  to.rank, block_text(to.samples, to.features), grid.batch, grid.features));
    }
    const auto first = std::partition_point(grid.bands.begin(), grid.bands.end(), [&](const SourceGrid::Band& band) {
      return band.samples.end <= to.samples.begin;
    });
    for (auto band = first; band != grid.bands.end() && band->samples.begin < to.samples.end; ++band) {
      const SampleRange samples{std::max(band->samples.begin, to.samples.begin),
                                std::min(band->samples.end, to.samples.end)};
      for (const SourceGrid::Distinct& block : band->blocks) {
        const FeatureRange features{std::max(block.features.begin, to.features.begin),
                                    std::min(block.features.end, to.features.end)};
        if (features.size() <= 0) continue;
        const std::vector<int>& holders = block.holders;
        const bool own = std::find(holders.begin(), holders.end(), to.rank) != holders.end();
        const int from = own ? to.rank : holders[static_cast<size_t>(to.rank) % holders.size()];
        transfers.push_back(BlockTransfer{from, to.rank, samples, features});
      }
    }
  }
  return transfers;
}

}  // namespace burst::cost
