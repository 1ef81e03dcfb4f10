#pragma once
// Text read from files (names in ONNX models, fields of traces) is checked as UTF-8 where it
// is read, and everything quoted in a message is escaped, so neither the model JSON burst
// writes nor the terminal ever receives bytes that are not UTF-8 or control characters.
#include <cstddef>
#include <string>
#include <string_view>

namespace burst {

// Whether `text` is well-formed UTF-8 (RFC 3629): no stray continuation byte, no truncated
// sequence, no overlong encoding, no surrogate (U+D800-U+DFFF), nothing above U+10FFFF.
bool is_valid_utf8(std::string_view text);

// Refuses text that is not UTF-8 with a one-line UserError:
// "WHAT is not UTF-8: 'ab\xfa'" (the text escaped and shortened to 40 characters).
void check_utf8(std::string_view text, const std::string& what);

// `text` safe to print: valid UTF-8 is kept, each byte that is not part of a valid sequence
// and each control character (U+0000-U+001F, U+007F, U+0080-U+009F) becomes "\xNN".
// "ab\xfa\n" -> "ab\\xfa\\x0a".
std::string escape_for_terminal(std::string_view text);

// escape_for_terminal(text), cut to at most `max_length` bytes (ending in "...") without
// splitting a character or an escape.
std::string escaped_excerpt(std::string_view text, size_t max_length);

}  // namespace burst
