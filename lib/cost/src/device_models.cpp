#include "burst/cost/device_models.h"

#include <algorithm>

#include <fmt/format.h>

#include "burst/cost/profile_cost_model.h"
#include "burst/util/error.h"

namespace burst::cost {

std::optional<Profile> builtin_profile(const std::string& device) {
  for (const auto& [file, text] : builtin_profile_texts()) {
    if (file == device + ".json") return profile_from_json_text(std::string(text));
  }
  return std::nullopt;
}

namespace {

DeviceModel fitted(DeviceSpec base, Profile profile, std::string fitted_on) {
  DeviceModel model;
  model.spec = fit_device(std::move(base), profile);
  model.fit_error = evaluate_fit(model.spec, profile);
  model.fitted_on = std::move(fitted_on);
  model.profile = std::move(profile);
  return model;
}

}  // namespace

DeviceModel resolve_device(const std::string& device, const std::optional<std::string>& profile_path) {
  if (profile_path) {
    Profile profile = load_profile_file(*profile_path);
    if (!device.empty() && device != profile.device) {
      throw UserError(fmt::format("profile '{}' is for device '{}', not '{}'", *profile_path,
                                  profile.device, device));
    }
    DeviceSpec base = catalog_device(profile.device);  // profiles always name their device
    return fitted(std::move(base), std::move(profile), *profile_path);
  }
  if (device.empty()) throw UserError("give a device kind (--device) or a profile (--profile)");
  if (device == "cpu") {
    throw UserError("device 'cpu' needs a profile of this machine: run `burst profile --model M "
                    "-o cpu.json` and pass --profile cpu.json");
  }
  if (auto profile = builtin_profile(device)) {
    return fitted(catalog_device(device), std::move(*profile), "built-in " + device + " profile");
  }
  catalog_device(device);  // throws for unknown kinds before the reference is fitted
  auto a100 = builtin_profile("a100");
  if (!a100) throw UserError(fmt::format("device '{}' needs the built-in a100 profile, which this build lacks", device));
  return borrow_curves(device, fitted(catalog_device("a100"), std::move(*a100), "built-in a100 profile"));
}

DeviceModel borrow_curves(const std::string& kind, const DeviceModel& reference) {
  DeviceModel model;
  model.spec = with_curves_of(catalog_device(kind), reference.spec);
  model.fitted_on = reference.fitted_on + " (curves moved to this device's peak and bandwidth)";
  model.fit_error = reference.fit_error;
  return model;
}

std::unique_ptr<CostModel> make_cost_model(const DeviceModel& device, std::optional<Precision> precision) {
  const DeviceSpec target = at_precision(device.spec, precision.value_or(device.spec.precision));
  if (!device.profile) return std::make_unique<AnalyticCostModel>(target);
  auto measured = std::make_unique<LayeredCostModel>(std::make_unique<ProfileCostModel>(*device.profile),
                                                     std::make_unique<AnalyticCostModel>(device.spec));
  if (target.precision == device.spec.precision) return measured;
  return std::make_unique<PrecisionScaledCostModel>(std::move(measured), device.spec, target);
}

Profile filter_batches(const Profile& profile, const std::vector<int64_t>& batches) {
  Profile kept = profile;
  kept.entries.clear();
  for (const ProfileEntry& entry : profile.entries) {
    if (std::find(batches.begin(), batches.end(), entry.batch) != batches.end()) {
      kept.entries.push_back(entry);
    }
  }
  kept.index();
  return kept;
}

}  // namespace burst::cost
