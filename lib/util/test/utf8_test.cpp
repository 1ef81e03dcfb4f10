#include "burst/util/utf8.h"

#include <gtest/gtest.h>

#include <string>

#include "burst/util/error.h"
#include "burst/util/json_io.h"

namespace burst {
namespace {

TEST(IsValidUtf8, AcceptsAsciiAndWellFormedMultiByteSequences) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("conv1.weight"));
  EXPECT_TRUE(is_valid_utf8("caf\xc3\xa9"));              // U+00E9, two bytes
  EXPECT_TRUE(is_valid_utf8("\xe2\x82\xac"));             // U+20AC, three bytes
  EXPECT_TRUE(is_valid_utf8("\xf0\x9f\x98\x80"));         // U+1F600, four bytes
  EXPECT_TRUE(is_valid_utf8("\xc2\x80\xdf\xbf"));         // U+0080 and U+07FF, the two-byte ends
  EXPECT_TRUE(is_valid_utf8("\xe0\xa0\x80\xef\xbf\xbf"));  // U+0800 and U+FFFF
  EXPECT_TRUE(is_valid_utf8("\xed\x9f\xbf\xee\x80\x80"));  // U+D7FF and U+E000, around the surrogates
  EXPECT_TRUE(is_valid_utf8("\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"));  // U+10000 and U+10FFFF
  EXPECT_TRUE(is_valid_utf8(std::string("a\0b", 3)));     // NUL is UTF-8 (a control character)
}

TEST(IsValidUtf8, RefusesStrayAndInvalidBytes) {
  EXPECT_FALSE(is_valid_utf8("ab\xfa"));      // the byte of the issue
  EXPECT_FALSE(is_valid_utf8("\x80"));        // a continuation byte without a lead
  EXPECT_FALSE(is_valid_utf8("\xbf"));
  EXPECT_FALSE(is_valid_utf8("\xff\xfe"));
  EXPECT_FALSE(is_valid_utf8("\xf5\x80\x80\x80"));  // leads 0xf5-0xf7 would go beyond U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // U+110000
}

TEST(IsValidUtf8, RefusesOverlongEncodings) {
  EXPECT_FALSE(is_valid_utf8("\xc0\x80"));          // NUL in two bytes
  EXPECT_FALSE(is_valid_utf8("\xc1\xbf"));          // U+007F in two bytes
  EXPECT_FALSE(is_valid_utf8("\xe0\x80\xaf"));      // '/' in three bytes
  EXPECT_FALSE(is_valid_utf8("\xe0\x9f\xbf"));      // U+07FF in three bytes
  EXPECT_FALSE(is_valid_utf8("\xf0\x8f\xbf\xbf"));  // U+FFFF in four bytes
}

TEST(IsValidUtf8, RefusesSurrogates) {
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));                  // U+D800
  EXPECT_FALSE(is_valid_utf8("\xed\xbf\xbf"));                  // U+DFFF
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\xbd\xed\xb8\x80"));      // a CESU-8 surrogate pair
}

TEST(IsValidUtf8, RefusesTruncatedSequences) {
  EXPECT_FALSE(is_valid_utf8("\xc3"));              // at the end
  EXPECT_FALSE(is_valid_utf8("\xc3" "a"));          // followed by ASCII
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));
  EXPECT_FALSE(is_valid_utf8("\xe2\x82" "a"));
  EXPECT_FALSE(is_valid_utf8("\xf0\x9f\x98"));
  EXPECT_FALSE(is_valid_utf8("\xf0\x9f\x98" "a"));
  EXPECT_FALSE(is_valid_utf8("\xf0\x9f\xc3\xa9"));  // a new lead byte inside the sequence
}

TEST(EscapeForTerminal, KeepsUtf8AndEscapesInvalidBytesAndControlCharacters) {
  EXPECT_EQ(escape_for_terminal("conv1"), "conv1");
  EXPECT_EQ(escape_for_terminal("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(escape_for_terminal("ab\xfa" "cd"), "ab\\xfacd");
  EXPECT_EQ(escape_for_terminal("\xc0\x80"), "\\xc0\\x80");
  EXPECT_EQ(escape_for_terminal("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(escape_for_terminal("\xe2\x82"), "\\xe2\\x82");
  EXPECT_EQ(escape_for_terminal("\xc3" "a"), "\\xc3a");  // the byte after a broken sequence is kept
  EXPECT_EQ(escape_for_terminal("a\nb\tc\x1b[31m\x7f"), "a\\nb\\x09c\\x1b[31m\\x7f");
  EXPECT_EQ(escape_for_terminal(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(escape_for_terminal("\xc2\x9b" "31m"), "\\xc2\\x9b31m");  // U+009B, the C1 CSI
  EXPECT_EQ(escape_for_terminal("\xc2\xa0"), "\xc2\xa0");              // U+00A0 is printable
}

TEST(EscapedExcerpt, CutsWithoutSplittingACharacterOrAnEscape) {
  EXPECT_EQ(escaped_excerpt("short", 10), "short");
  EXPECT_EQ(escaped_excerpt("0123456789", 10), "0123456789");
  EXPECT_EQ(escaped_excerpt("0123456789a", 10), "0123456...");
  EXPECT_EQ(escaped_excerpt("012345\xc3\xa9zzzz", 10), "012345...");      // é would need 2 of the 1 left
  EXPECT_EQ(escaped_excerpt("01234\xc3\xa9zzzz", 10), "01234\xc3\xa9...");
  EXPECT_EQ(escaped_excerpt("0123\xfazzzzzz", 10), "0123...");             // "\xfa" needs 4 of the 3 left
  EXPECT_EQ(escaped_excerpt("012\xfazzzzzz", 10), "012\\xfa...");
  for (const char* text : {"\xfa\xfa\xfa\xfa\xfa\xfa\xfa\xfa\xfa\xfa\xfa\xfa", "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"}) {
    const std::string excerpt = escaped_excerpt(text, 10);
    EXPECT_LE(excerpt.size(), 10u) << excerpt;
    EXPECT_TRUE(is_valid_utf8(excerpt)) << excerpt;
  }
}

TEST(CheckUtf8, RefusesWithOneLineNamingWhatAndTheEscapedText) {
  EXPECT_NO_THROW(check_utf8("caf\xc3\xa9", "the name"));
  try {
    check_utf8("conv\xfa\n1", "the name of ONNX node #3 (Conv)");
    FAIL() << "accepted text that is not UTF-8";
  } catch (const UserError& error) {
    EXPECT_STREQ(error.what(), "the name of ONNX node #3 (Conv) is not UTF-8: 'conv\\xfa\\n1'");
  }
  try {
    check_utf8(std::string(60, '\xfa'), "field 2");
    FAIL() << "accepted text that is not UTF-8";
  } catch (const UserError& error) {
    EXPECT_EQ(std::string(error.what()), "field 2 is not UTF-8: '" + std::string("\\xfa\\xfa\\xfa\\xfa\\xfa\\xfa\\xfa\\xfa\\xfa...") + "'");
  }
}

}  // namespace
}  // namespace burst
