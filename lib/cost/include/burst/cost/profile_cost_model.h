#pragma once
// A cost model backed by a measured profile table.
#include <map>
#include <utility>
#include <vector>

#include "burst/cost/cost_model.h"
#include "burst/cost/profile.h"

namespace burst::cost {

// Looks a layer up by its signature. At a measured batch the time is the measurement.
// Between two measured batches b0 < b < b1 forward and backward are interpolated
// linearly in log(time) vs log(batch); the measured points are first made non-decreasing
// (a running maximum over batches) so the curve is monotone. Above the largest measured
// batch time grows in proportion to the batch (a saturated device). Below the smallest
// measured batch, or for an unknown signature, there is no estimate (std::nullopt).
class ProfileCostModel : public CostModel {
 public:
  explicit ProfileCostModel(Profile profile);

  std::string device() const override { return profile_.device; }
  std::optional<LayerEstimate> estimate(const graph::Graph& graph, graph::LayerId id,
                                        int64_t batch) const override;
  // From the entries' split times (BatchNorm2d), interpolated as estimate() does.
  std::optional<LayerEstimate> estimate_split(const graph::Graph& graph, graph::LayerId id,
                                              int64_t batch) const override;
  // One part's time under a column, row or heads split, from the profile's entries of that
  // part (ProfileEntry::split), interpolated as estimate() does; the default for the kinds
  // that keep the whole layer.
  std::optional<LayerEstimate> estimate_tensor(const graph::Graph& graph, graph::LayerId id, int64_t batch,
                                               const TensorSplit& split) const override;
  // The measured update of the layer's signature (any batch's entry holds it), if measured.
  std::optional<Seconds> update(const graph::Graph& graph, graph::LayerId id) const override;
  // The same lookup by signature (for tools that have no graph at hand).
  std::optional<LayerEstimate> estimate_signature(const std::string& signature, int64_t batch) const;

  const Profile& profile() const { return profile_; }

 private:
  // One profile key's monotone curves, built once: planners ask for every layer at every
  // candidate batch, so the running maxima are not recomputed per question.
  struct Curves {
    std::vector<std::pair<int64_t, Seconds>> forward;   // batch ascending, non-decreasing
    std::vector<std::pair<int64_t, Seconds>> backward;
    std::vector<std::pair<int64_t, Seconds>> split_forward;  // only the batches that have them
    std::vector<std::pair<int64_t, Seconds>> split_backward;
    const std::map<int64_t, const ProfileEntry*>* measured = nullptr;  // the entries, by batch
  };

  // A profile key's (profile_key) time at `batch` from its curves: the split BatchNorm
  // ones or the plain ones.
  std::optional<LayerEstimate> from_curves(const std::string& key, int64_t batch, bool split) const;

  Profile profile_;
  std::map<std::string, Curves> curves_;
};

// Interpolates the points (batch -> time), batches ascending and times non-decreasing,
// as described above. Exposed for tests.
std::optional<Seconds> interpolate_log_log(const std::vector<std::pair<int64_t, Seconds>>& points,
                                           int64_t batch);

}  // namespace burst::cost
