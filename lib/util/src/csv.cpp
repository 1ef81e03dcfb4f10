#include "burst/util/csv.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "burst/util/json_io.h"
#include "burst/util/utf8.h"

namespace burst {
namespace {

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    fields.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return fields;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// Refuses a line with a field that is not UTF-8: "SOURCE:LINE: field 2 (name) is not UTF-8: '...'"
// (a header field is named by its position alone).
void check_fields_are_utf8(const std::vector<std::string>& fields, const std::vector<std::string>& header,
                           const std::string& source, int line) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (is_valid_utf8(fields[i])) continue;
    const bool named = i < header.size() && is_valid_utf8(header[i]);
    check_utf8(fields[i], fmt::format("{}:{}: field {}{}", source, line, i + 1,
                                      named ? fmt::format(" ({})", header[i]) : std::string()));
  }
}

}  // namespace

size_t CsvTable::column(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  throw UserError(fmt::format("{}:1: no column '{}' (columns: {})", source, name, joined(header)));
}

std::string CsvTable::where(const CsvRow& row) const { return fmt::format("{}:{}", source, row.line); }

double CsvTable::number(const CsvRow& row, size_t index, double minimum, double maximum) const {
  const std::string& text = row.fields.at(index);
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(value) || value < minimum || value > maximum) {
    const std::string range = maximum < 1e300 ? fmt::format("in [{}, {}]", minimum, maximum) : fmt::format(">= {}", minimum);
    throw UserError(fmt::format("{}: {} must be a number {}, got '{}'", where(row), header.at(index), range,
                                text_excerpt(text)));
  }
  return value;
}

int64_t CsvTable::whole(const CsvRow& row, size_t index, int64_t minimum, int64_t maximum) const {
  const std::string& text = row.fields.at(index);
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < minimum || value > maximum) {
    throw UserError(fmt::format("{}: {} must be a whole number in [{}, {}], got '{}'", where(row),
                                header.at(index), minimum, maximum, text_excerpt(text)));
  }
  return value;
}

CsvTable parse_csv(const std::string& text, const std::string& source) {
  CsvTable table;
  table.source = source;
  std::istringstream stream(text);
  std::string line;
  for (int number = 1; std::getline(stream, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> fields = split_fields(line);
    if (!is_valid_utf8(line)) check_fields_are_utf8(fields, table.header, source, number);
    if (table.header.empty()) {
      table.header = std::move(fields);
      continue;
    }
    if (fields.size() != table.header.size()) {
      throw UserError(fmt::format("{}:{}: expected {} fields ({}), got {}", source, number, table.header.size(),
                                  joined(table.header), fields.size()));
    }
    table.rows.push_back(CsvRow{number, std::move(fields)});
  }
  if (table.header.empty()) throw UserError(fmt::format("{}: empty (expected a header line)", source));
  return table;
}

CsvTable read_csv(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw UserError(fmt::format("cannot read '{}'", path));
  std::ostringstream text;
  text << file.rdbuf();
  return parse_csv(text.str(), path);
}

}  // namespace burst
