#include "burst/cost/device_models.h"

#include <gtest/gtest.h>

#include "burst/util/error.h"

namespace burst::cost {
namespace {

std::string resolve_error(const std::string& device, const std::optional<std::string>& profile) {
  try {
    resolve_device(device, profile);
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(DeviceModels, ClearErrors) {
  EXPECT_EQ(resolve_error("tpu", std::nullopt).rfind("unknown device kind 'tpu'", 0), 0u);
  EXPECT_EQ(resolve_error("cpu", std::nullopt).rfind("device 'cpu' needs a profile", 0), 0u);
  EXPECT_EQ(resolve_error("", std::nullopt), "give a device kind (--device) or a profile (--profile)");
  EXPECT_EQ(resolve_error("", std::string("no/such.json")),
            "cannot open profile 'no/such.json': No such file or directory");
}

TEST(DeviceModels, CopiedProfilesKeepAWorkingIndex) {
  Profile profile;
  profile.device = "cpu";
  ProfileEntry entry;
  entry.signature = "relu{}[4]";
  entry.op = "relu";
  entry.batch = 2;
  profile.entries = {entry};
  profile.index();
  const Profile copy = profile;  // must not point into `profile`
  profile.entries.clear();
  profile.index();
  ASSERT_NE(copy.find("relu{}[4]"), nullptr);
  EXPECT_EQ(copy.find("relu{}[4]")->at(2), &copy.entries[0]);
  const Profile kept = filter_batches(copy, {2});
  EXPECT_EQ(kept.entries.size(), 1u);
  EXPECT_TRUE(filter_batches(copy, {1}).entries.empty());
}

}  // namespace
}  // namespace burst::cost
