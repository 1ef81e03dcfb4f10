#include "burst/cost/profile.h"

#include <gtest/gtest.h>

#include "burst/util/error.h"

namespace burst::cost {
namespace {

Profile two_entry_profile() {
  Profile profile;
  profile.device = "cpu";
  profile.description = "test";
  ProfileEntry a;
  a.signature = "relu{}[4]";
  a.op = "relu";
  a.batch = 1;
  a.forward = Seconds::from_ms(0.5);
  a.backward = Seconds::from_ms(1.25);
  a.backward_input = Seconds::from_ms(1.25);
  a.update = Seconds::from_ms(0.125);
  a.split_forward = Seconds::from_ms(0.75);
  a.split_backward = Seconds::from_ms(1.5);
  a.repetitions = 10;
  a.forward_flops_per_sample = 4;
  ProfileEntry b = a;
  b.batch = 4;
  b.backward_input.reset();
  b.update.reset();
  b.split_forward.reset();
  b.split_backward.reset();
  profile.entries = {a, b};
  profile.index();
  return profile;
}

TEST(Profile, JsonRoundTrip) {
  const Profile original = two_entry_profile();
  const Profile read = profile_from_json_text(profile_to_json_text(original));
  ASSERT_EQ(read.entries.size(), 2u);
  EXPECT_EQ(read.device, "cpu");
  EXPECT_DOUBLE_EQ(read.entries[0].backward.ms(), 1.25);
  EXPECT_TRUE(read.entries[0].backward_input.has_value());
  EXPECT_FALSE(read.entries[1].backward_input.has_value());
  ASSERT_TRUE(read.entries[0].update.has_value());
  EXPECT_DOUBLE_EQ(read.entries[0].update->ms(), 0.125);
  EXPECT_FALSE(read.entries[1].update.has_value());
  ASSERT_TRUE(read.entries[0].split_backward.has_value());
  EXPECT_DOUBLE_EQ(read.entries[0].split_backward->ms(), 1.5);
  EXPECT_FALSE(read.entries[1].split_forward.has_value());
  ASSERT_NE(read.find("relu{}[4]"), nullptr);
  EXPECT_EQ(read.find("relu{}[4]")->size(), 2u);
  EXPECT_EQ(profile_to_json_text(read), profile_to_json_text(original));
}

std::string read_error(const std::string& text) {
  try {
    profile_from_json_text(text);
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(Profile, RefusesMalformedEntries) {
  const std::string head = R"({"format": "burst.profile", "version": 1, "device": "cpu", "entries": [)";
  EXPECT_EQ(read_error(head + R"({"signature": "x", "op": "relu", "batch": 0, "forward_ms": 1, "backward_ms": 1}]})"),
            "profile entry #0: field 'batch' must be positive, got 0");
  EXPECT_EQ(read_error(head + R"({"signature": "x", "op": "relu", "batch": 1, "forward_ms": -1, "backward_ms": 1}]})"),
            "profile entry #0: field 'forward_ms' must be a time >= 0 ms, got -1");
  EXPECT_EQ(read_error(head + R"({"signature": "x", "op": "relu", "batch": 1, "forward_ms": 1, "backward_ms": 1, "update_ms": -2}]})"),
            "profile entry #0: field 'update_ms' must be a time >= 0 ms, got -2");
  EXPECT_EQ(read_error(head + R"({"signature": "x", "op": "relu", "batch": 1, "forward_ms": 1, "backward_ms": 1, "split_forward_ms": 2}]})"),
            "profile entry #0: field 'split_backward_ms' is missing: split times come in pairs");
  EXPECT_EQ(read_error(head + R"({"signature": "x", "op": "relu", "batch": 1, "forward_ms": 1, "backward_ms": 1},)"
                              R"({"signature": "x", "op": "relu", "batch": 1, "forward_ms": 1, "backward_ms": 1}]})"),
            "profile has two entries for batch 1 of x");
  EXPECT_EQ(read_error(R"({"format": "burst.model", "version": 1})"),
            "profile: format is \"burst.model\", expected \"burst.profile\"");
}

TEST(Profile, SplitEntriesAreKeptApartFromTheWholeLayer) {
  // A whole linear and its 4-way column part at the same batch: two keys, both kept.
  Profile profile = two_entry_profile();
  ProfileEntry part = profile.entries[0];
  part.split = TensorSplit{SplitKind::Column, 4};
  part.forward = Seconds::from_ms(0.25);
  profile.entries.push_back(part);
  profile.index();
  const TensorSplit column{SplitKind::Column, 4};
  ASSERT_NE(profile.find("relu{}[4]", column), nullptr);
  EXPECT_DOUBLE_EQ(profile.find("relu{}[4]", column)->at(1)->forward.ms(), 0.25);
  EXPECT_DOUBLE_EQ(profile.find("relu{}[4]")->at(1)->forward.ms(), 0.5);
  EXPECT_EQ(profile.find("relu{}[4]", TensorSplit{SplitKind::Row, 4}), nullptr);
  EXPECT_EQ(profile_key("relu{}[4]", column), "relu{}[4] split column/4");
  const Profile read = profile_from_json_text(profile_to_json_text(profile));
  EXPECT_EQ(read.entries[2].split, column);
  EXPECT_EQ(profile_to_json_text(read), profile_to_json_text(profile));
}

TEST(Profile, RefusesMalformedSplits) {
  const std::string head = R"({"format": "burst.profile", "version": 1, "device": "cpu", "entries": [)";
  const std::string entry = R"({"signature": "x", "op": "linear", "batch": 1, "forward_ms": 1, "backward_ms": 1, )";
  EXPECT_EQ(read_error(head + entry + R"("split": {"kind": "features", "parts": 2}}]})"),
            "profile entry #0 split: field 'kind' must be column, row or heads, got features");
  EXPECT_EQ(read_error(head + entry + R"("split": {"kind": "row", "parts": 1}}]})"),
            "profile entry #0 split: field 'parts' must be in [2, 1000000], got 1");
  EXPECT_NE(read_error(head + entry + R"("split": {"kind": "sideways", "parts": 2}}]})")
                .find("profile entry #0 split: field 'kind' "),
            std::string::npos);
  EXPECT_EQ(read_error(head + entry + R"("split": {"kind": "row", "parts": 2, "extra": 1}}]})"),
            "profile entry #0 split: unknown field 'extra' (accepted: kind, parts)");
  EXPECT_EQ(read_error(head + entry + R"("split": {"kind": "row", "parts": 2}}, )" + entry +
                       R"("split": {"kind": "row", "parts": 2}}]})"),
            "profile has two entries for batch 1 of x (2-way row part)");
}

}  // namespace
}  // namespace burst::cost
