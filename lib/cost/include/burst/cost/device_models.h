#pragma once
// Choosing a cost model for a device kind, the way every command's
// `--device KIND [--profile FILE]` does:
//  - a kind with a built-in profile (a100, from DeepPool's measurements): that profile,
//    with the analytic model fitted to it filling the gaps;
//  - another catalog GPU (v100, a100-80gb, h100-sxm, h200): the analytic model with its
//    own datasheet peak and bandwidth and the curves fitted to the A100 profile;
//  - `--profile FILE`: the measured file first, the analytic model fitted to that same
//    file for the gaps (the device kind is the profile's; "cpu" for `burst profile` output).
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "burst/cost/analytic.h"
#include "burst/cost/cost_model.h"
#include "burst/cost/profile.h"

namespace burst::cost {

// Profiles compiled into burst from data/profiles/*.json: {file name (KIND.json), JSON text}.
std::vector<std::pair<std::string_view, std::string_view>> builtin_profile_texts();
std::optional<Profile> builtin_profile(const std::string& device);

struct DeviceModel {
  DeviceSpec spec;                    // the fitted analytic device
  std::optional<Profile> profile;     // measured data, when there is any
  std::string fitted_on;              // what the curves were fitted to
  FitError fit_error;                 // of the analytic model on `fitted_on`'s entries
};

// Resolves a device kind and/or a profile file as described above. Throws UserError for
// an unknown kind, a missing/malformed profile, a profile for another device than asked,
// or `cpu` without a profile.
DeviceModel resolve_device(const std::string& device, const std::optional<std::string>& profile_path);

// A catalog GPU without measurements, with the curves of `reference` (a measured device,
// in practice the A100) moved to its own peak and bandwidth.
DeviceModel borrow_curves(const std::string& kind, const DeviceModel& reference);

// The cost model of a resolved device at `precision` (none: the device's default
// precision, default_precision): measured first, analytic for the gaps. Measured data is
// taken to be at the default precision and carried to another by PrecisionScaledCostModel.
// UserError when the device lacks `precision` (at_precision).
std::unique_ptr<CostModel> make_cost_model(const DeviceModel& device, std::optional<Precision> precision = std::nullopt);

// Keeps only the entries whose batch is in `batches` (for held-out fit checks).
Profile filter_batches(const Profile& profile, const std::vector<int64_t>& batches);

}  // namespace burst::cost
