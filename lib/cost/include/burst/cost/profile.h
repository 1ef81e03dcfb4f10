#pragma once
// Profile tables: measured per-layer times keyed by layer signature and per-device batch
// (format "burst.profile", version 1; see docs/profile-format.md).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "burst/cost/tensor_split.h"
#include "burst/util/units.h"

namespace burst::cost {

inline constexpr const char* kProfileFormat = "burst.profile";
inline constexpr int kProfileFormatVersion = 1;

// One layer signature at one per-device batch. Times are medians over repetitions.
struct ProfileEntry {
  std::string signature;  // graph::layer_signature
  std::string op;         // op name ("conv2d"), for fitting per op kind
  int64_t batch = 0;      // per-device batch (samples)
  // One part of the layer under a tensor split (column, row or heads; tensor_split.h): the
  // part's own compute (its slices of the weights, a row part's input slice), without the
  // split's all-reduces. Samples (the default): the whole layer.
  TensorSplit split;
  Seconds forward;
  Seconds backward;  // input gradient + weight gradient
  // Parts of backward when measured separately (burst profile measures both).
  std::optional<Seconds> backward_input;
  std::optional<Seconds> backward_weight;
  // The optimizer's update of the layer's parameters after backward (burst train's default
  // optimizer: SGD without momentum, one `p -= lr * grad` per tensor); the same at every
  // batch. Absent when not measured (imported data, profiles from before it was measured).
  std::optional<Seconds> update;
  // A layer the runtime runs differently when it is split over several ranks (BatchNorm2d:
  // statistics synchronised over the ranks): one shard's forward and backward as run then,
  // without the communication. Absent for other layers and when not measured.
  std::optional<Seconds> split_forward;
  std::optional<Seconds> split_backward;
  // Relative spread of the repetitions, (p90 - p10) / median; 0 when unknown.
  double forward_spread = 0;
  double backward_spread = 0;
  int repetitions = 0;  // 0 when unknown (imported data)
  // The layer's work (a split entry's: its part's), per sample, so analytic models can be
  // fitted from a profile alone.
  int64_t forward_flops_per_sample = 0;
  int64_t input_bytes_per_sample = 0;
  int64_t output_bytes_per_sample = 0;
  int64_t params = 0;
};

struct Profile {
  Profile() = default;
  // The index points into `entries`: copies rebuild it, moves keep it (a moved vector
  // keeps its elements where they are).
  Profile(const Profile& other);
  Profile& operator=(const Profile& other);
  Profile(Profile&&) noexcept = default;
  Profile& operator=(Profile&&) noexcept = default;

  std::string device;       // device kind the times are for: "cpu", "a100", ...
  std::string description;  // hardware and software it was measured on
  std::string source;       // who measured it and how (attribution for imported data)
  std::vector<ProfileEntry> entries;

  // Entries of one signature, by batch (a view rebuilt by index()): the whole layer's, or
  // one part's under `split`.
  const std::map<int64_t, const ProfileEntry*>* find(const std::string& signature,
                                                     const TensorSplit& split = {}) const;
  // Rebuilds the signature index; call after changing `entries`. Throws UserError on
  // a duplicate (signature, split, batch).
  void index();

 private:
  std::map<std::string, std::map<int64_t, const ProfileEntry*>> by_signature_;
};

// JSON I/O. Reading validates everything (positive batch, finite non-negative times,
// known format/version) and throws UserError with a one-line reason naming the entry.
// The key find() indexes by: the signature, then " split <kind>/<parts>" for a split entry.
std::string profile_key(const std::string& signature, const TensorSplit& split);

std::string profile_to_json_text(const Profile& profile);
Profile profile_from_json_text(const std::string& text);
Profile load_profile_file(const std::string& path);
// Writes atomically (temporary file + rename) so an interrupted write never leaves a
// half-written profile behind.
void save_profile_file(const Profile& profile, const std::string& path);

}  // namespace burst::cost
