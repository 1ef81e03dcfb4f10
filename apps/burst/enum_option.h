#pragma once
// A command-line option whose value is one of an enum's names (burst/util/enum_names.h): the
// choices, the default shown in --help and the parse all come from the enum's one table.
#include <cstddef>
#include <string>

#include <CLI/CLI.hpp>

#include "burst/util/enum_names.h"

namespace burst::cli {

template <typename Enum, std::size_t N>
CLI::Option* add_enum_option(CLI::App& command, const std::string& name, Enum& target, const EnumNames<Enum, N>& names,
                             const std::string& help) {
  const EnumNames<Enum, N>* table = &names;  // a constexpr table: lives for the program
  return command
      .add_option_function<std::string>(
          name, [&target, table](const std::string& word) { target = table->parse(word); }, help)
      ->check(CLI::IsMember(names.names()))
      ->default_str(names.name(target));
}

}  // namespace burst::cli
