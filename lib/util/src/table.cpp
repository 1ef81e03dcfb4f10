#include "burst/util/table.h"

#include <algorithm>

#include "burst/util/error.h"

namespace burst {

void TextTable::add_row(std::vector<std::string> cells) {
  BURST_ASSERT(cells.size() == columns_.size(), "table row width differs from the header");
  rows_.push_back(std::move(cells));
}

void TextTable::add_rule() { rows_.emplace_back(); }

void TextTable::print(std::ostream& out) const {
  std::vector<size_t> widths;
  for (const Column& column : columns_) widths.push_back(column.header.size());
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  auto print_cells = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) {
      const std::string padding(widths[i] - cells[i].size(), ' ');
      if (i != 0) line += "  ";
      line += columns_[i].align == Align::Right ? padding + cells[i] : cells[i] + padding;
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  };
  std::vector<std::string> headers;
  for (const Column& column : columns_) headers.push_back(column.header);
  print_cells(headers);
  size_t total_width = 0;
  for (const size_t width : widths) total_width += width;
  const std::string rule(total_width + 2 * (widths.size() - 1), '-');
  out << rule << '\n';
  for (const auto& row : rows_) {
    if (row.empty()) {
      out << rule << '\n';
    } else {
      print_cells(row);
    }
  }
}

}  // namespace burst
