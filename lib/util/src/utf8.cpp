#include "burst/util/utf8.h"

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst {
namespace {

constexpr size_t kCheckExcerptLength = 40;

unsigned char byte_at(std::string_view text, size_t at) { return static_cast<unsigned char>(text[at]); }

// The length of the well-formed UTF-8 sequence starting at `at`, or 0 if there is none. The
// ranges allowed for the second byte rule out overlong forms, surrogates and > U+10FFFF.
size_t sequence_length(std::string_view text, size_t at) {
  const unsigned char lead = byte_at(text, at);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;   // below: overlong
    if (lead == 0xed) high = 0x9f;  // above: surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;   // below: overlong
    if (lead == 0xf4) high = 0x8f;  // above: beyond U+10FFFF
  } else {
    return 0;  // a continuation byte, an overlong lead (0xc0, 0xc1) or 0xf5-0xff
  }
  if (text.size() - at < length) return 0;
  const unsigned char second = byte_at(text, at + 1);
  if (second < low || second > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if ((byte_at(text, at + i) & 0xc0) != 0x80) return 0;
  }
  return length;
}

// Whether the sequence at `at` of `length` bytes is a C0 or C1 control character or DEL.
bool is_control(std::string_view text, size_t at, size_t length) {
  const unsigned char lead = byte_at(text, at);
  if (length == 1) return lead < 0x20 || lead == 0x7f;
  return length == 2 && lead == 0xc2 && byte_at(text, at + 1) < 0xa0;
}

// The printable form of the character (or invalid byte) at `at`; sets `length` to the bytes
// it stands for.
std::string escaped_character(std::string_view text, size_t at, size_t& length) {
  length = sequence_length(text, at);
  if (length == 0) {
    length = 1;
    return fmt::format("\\x{:02x}", byte_at(text, at));
  }
  if (!is_control(text, at, length)) return std::string(text.substr(at, length));
  if (text[at] == '\n') return "\\n";  // as every error line has always shown a newline
  std::string escaped;
  for (size_t i = 0; i < length; ++i) escaped += fmt::format("\\x{:02x}", byte_at(text, at + i));
  return escaped;
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    const size_t length = sequence_length(text, at);
    if (length == 0) return false;
    at += length;
  }
  return true;
}

void check_utf8(std::string_view text, const std::string& what) {
  if (is_valid_utf8(text)) return;
  throw UserError(fmt::format("{} is not UTF-8: '{}'", what, escaped_excerpt(text, kCheckExcerptLength)));
}

std::string escape_for_terminal(std::string_view text) {
  std::string printable;
  printable.reserve(text.size());
  for (size_t at = 0, length = 0; at < text.size(); at += length) {
    printable += escaped_character(text, at, length);
  }
  return printable;
}

std::string escaped_excerpt(std::string_view text, size_t max_length) {
  const std::string whole = escape_for_terminal(text);
  if (whole.size() <= max_length) return whole;
  const std::string ellipsis = "...";
  std::string excerpt;
  for (size_t at = 0, length = 0; at < text.size(); at += length) {
    const std::string piece = escaped_character(text, at, length);
    if (excerpt.size() + piece.size() + ellipsis.size() > max_length) break;
    excerpt += piece;
  }
  return excerpt + ellipsis;
}

}  // namespace burst
