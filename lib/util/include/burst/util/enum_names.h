#pragma once
// One table of words per enum: the enum's name for each value and its parser, both read off
// the same table, so a word is written once. The parser's refusal is one line:
// "unknown WHAT 'WORD' (known: a, b, c)". The command line's choices (CLI11's IsMember)
// and help texts take names() from the same table.
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "burst/util/error.h"

namespace burst {

template <typename Enum>
struct EnumName {
  Enum value;
  const char* name;
};

// The UserError of an unknown word, listing the known ones.
[[noreturn]] void throw_unknown_name(const char* what, const std::string& word, const std::vector<std::string>& known);

template <typename Enum, std::size_t N>
struct EnumNames {
  const char* what;  // what the words name, for the refusal: "optimizer", "precision"
  std::array<EnumName<Enum>, N> entries;

  const char* name(Enum value) const {
    for (const EnumName<Enum>& entry : entries) {
      if (entry.value == value) return entry.name;
    }
    BURST_ASSERT(false, std::string("a value of ") + what + " has no name");
  }
  Enum parse(const std::string& word) const {
    for (const EnumName<Enum>& entry : entries) {
      if (word == entry.name) return entry.value;
    }
    throw_unknown_name(what, word, names());
  }
  std::vector<std::string> names() const {
    std::vector<std::string> words;
    for (const EnumName<Enum>& entry : entries) words.emplace_back(entry.name);
    return words;
  }
};

}  // namespace burst
