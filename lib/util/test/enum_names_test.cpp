#include "burst/util/enum_names.h"

#include <gtest/gtest.h>

namespace burst {
namespace {

enum class Colour { Red, Green };
constexpr EnumNames<Colour, 2> kColourNames{"colour", {{{Colour::Red, "red"}, {Colour::Green, "green"}}}};

TEST(EnumNames, NamesAndParsesFromOneTable) {
  EXPECT_STREQ(kColourNames.name(Colour::Green), "green");
  EXPECT_EQ(kColourNames.parse("red"), Colour::Red);
  EXPECT_EQ(kColourNames.names(), (std::vector<std::string>{"red", "green"}));
}

TEST(EnumNames, RefusesAnUnknownWordListingTheKnownOnes) {
  try {
    kColourNames.parse("blue");
    FAIL() << "parsed an unknown word";
  } catch (const UserError& error) {
    EXPECT_STREQ(error.what(), "unknown colour 'blue' (known: red, green)");
  }
}

}  // namespace
}  // namespace burst
