#pragma once
// A plain-text table for human output: columns padded to their widest cell, numeric
// columns right-aligned.
#include <ostream>
#include <string>
#include <vector>

namespace burst {

class TextTable {
 public:
  enum class Align { Left, Right };
  struct Column {
    std::string header;
    Align align = Align::Left;
  };

  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

  // Adds one row; it must have exactly one cell per column.
  void add_row(std::vector<std::string> cells);
  // Adds a horizontal rule (e.g. before a totals row).
  void add_rule();

  void print(std::ostream& out) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;  // an empty row is a rule
};

}  // namespace burst
