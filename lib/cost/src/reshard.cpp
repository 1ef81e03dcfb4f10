#include "burst/cost/reshard.h"

#include <algorithm>
#include <numeric>
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

}  // namespace burst::cost
