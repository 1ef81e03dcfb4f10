#pragma once
// The algebra behind the burst planner's dynamic programming.
//
// The planner walks the graph from the loss back to the input, adding one piece (a layer,
// an edge, a whole branch) in front of what it has already planned. The state after a
// suffix of the model is two times, both measured from the start of the iteration:
//   G: when the suffix's last backward is done (the whole forward, plus the backward so far);
//   H: when its communication queue is done (the all-reduces issued so far).
// Adding a piece in front with forward time f (compute plus its forward re-shards),
// backward time b (likewise) and all-reduce time s shifts the whole backward later by f:
//   G' = G + f + b,    H' = max(G', H + f) + s.
// Every piece, and every composition of pieces, is therefore a map of the form
//   G' = G + alpha,    H' = max(G + beta, H + gamma)     (beta >= alpha, beta >= gamma)
// A Transform holds (alpha, beta, gamma). Starting from (0, 0) at the loss, the iteration
// time of a whole plan is max(G, H) = beta of its composed transform.
//
// The maps are monotone, so among several ways to plan the same part, one whose three
// numbers are all no larger is never worse: the planner keeps small Pareto sets.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "burst/util/error.h"

namespace burst::planner::detail {

struct Transform {
  double alpha = 0;
  double beta = 0;
  double gamma = 0;

  bool operator==(const Transform& other) const {
    return alpha == other.alpha && beta == other.beta && gamma == other.gamma;
  }
};

// A layer: forward f, backward b, all-reduce s.
inline Transform layer_transform(double forward, double backward, double sync) {
  return {forward + backward, forward + backward + sync, forward + sync};
}

// A re-shard: activations forward in `forward` seconds, gradients back in `backward` (0
// when none go back, as into the data).
inline Transform edge_transform(double forward, double backward) {
  return {forward + backward, forward + backward, forward};
}
// The same time each way.
inline Transform edge_transform(double transfer) { return edge_transform(transfer, transfer); }

// `first` (nearer the loss) then `second` (nearer the input).
inline Transform then(const Transform& first, const Transform& second) {
  return {first.alpha + second.alpha,
          std::max(first.alpha + second.beta, first.beta + second.gamma),
          first.gamma + second.gamma};
}

// Pieces running at the same time on disjoint devices, approximated by their slowest.
inline Transform together(const Transform& a, const Transform& b) {
  return {std::max(a.alpha, b.alpha), std::max(a.beta, b.beta), std::max(a.gamma, b.gamma)};
}

// One way to plan a part: its transform and, while reconstructing, where it came from.
struct Option {
  Transform transform;
  int32_t from_count = -1;  // the candidate index it extends
  int32_t from_option = -1;  // the option index it extends
  int32_t piece_option = -1;  // the option of the piece added
};

// A Pareto set of options over the first `dims` numbers (2 when the start state is known,
// so gamma no longer matters), at most `capacity` of them (beyond that the ones with the
// largest alpha + beta go, see evict_one). Deterministic: ties keep the option inserted first.
class OptionSet {
 public:
  OptionSet() = default;
  OptionSet(int dims, int capacity) : dims_(dims), capacity_(capacity) {}

  const std::vector<Option>& options() const { return options_; }
  bool empty() const { return options_.empty(); }

  void insert(const Option& option) {
    for (const Option& kept : options_) {
      if (covers(kept.transform, option.transform)) return;
    }
    options_.erase(std::remove_if(options_.begin(), options_.end(),
                                  [&](const Option& kept) { return covers(option.transform, kept.transform); }),
                   options_.end());
    options_.push_back(option);
    if (static_cast<int>(options_.size()) > capacity_) evict_one();
  }

  // The option with the smallest beta (iteration time from a (0, 0) start).
  const Option& best() const {
    BURST_ASSERT(!options_.empty(), "best() of an empty option set");
    return *std::min_element(options_.begin(), options_.end(), [](const Option& a, const Option& b) {
      return a.transform.beta < b.transform.beta;
    });
  }

 private:
  // Over capacity: keep the options best in alpha, in beta and in gamma (each can be the
  // one that wins once composed with the rest of the model: a small alpha hides a large
  // all-reduce behind later backward), and drop the largest alpha + beta among the rest.
  void evict_one() {
    auto best_in = [&](double Transform::*field) {
      return std::min_element(options_.begin(), options_.end(), [&](const Option& a, const Option& b) {
               return a.transform.*field < b.transform.*field;
             }) - options_.begin();
    };
    const auto keep_alpha = best_in(&Transform::alpha);
    const auto keep_beta = best_in(&Transform::beta);
    const auto keep_gamma = best_in(&Transform::gamma);
    std::ptrdiff_t worst = -1;
    for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(options_.size()); ++i) {
      if (i == keep_alpha || i == keep_beta || i == keep_gamma) continue;
      const Transform& t = options_[static_cast<size_t>(i)].transform;
      if (worst < 0 || t.alpha + t.beta > options_[static_cast<size_t>(worst)].transform.alpha +
                                               options_[static_cast<size_t>(worst)].transform.beta) {
        worst = i;
      }
    }
    BURST_ASSERT(worst >= 0, "option sets hold at least 4 options");
    options_.erase(options_.begin() + worst);
  }

  bool covers(const Transform& a, const Transform& b) const {
    return a.alpha <= b.alpha && a.beta <= b.beta && (dims_ < 3 || a.gamma <= b.gamma);
  }

  int dims_ = 3;
  int capacity_ = 4;
  std::vector<Option> options_;
};

}  // namespace burst::planner::detail
