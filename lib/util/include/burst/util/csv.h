#pragma once
// Comma-separated tables with a header row (no quoting: the traces and tables burst reads
// have none). Every error names the file and line: "FILE:LINE: ...", a UserError.
#include <cstdint>
#include <string>
#include <vector>

namespace burst {

struct CsvRow {
  int line = 0;  // 1-based line in the source
  std::vector<std::string> fields;
};

struct CsvTable {
  std::string source;  // the file's path (or a name for text), for messages
  std::vector<std::string> header;
  std::vector<CsvRow> rows;  // blank lines skipped

  // The index of a header column; UserError naming the columns when it is missing.
  size_t column(const std::string& name) const;
  // "SOURCE:LINE" of a row.
  std::string where(const CsvRow& row) const;
  // The field of `row` in column `index` as a finite number in [minimum, maximum], or a whole
  // number in [minimum, maximum]; UserError "SOURCE:LINE: COLUMN must be ..., got 'TEXT'".
  double number(const CsvRow& row, size_t index, double minimum, double maximum = 1e300) const;
  int64_t whole(const CsvRow& row, size_t index, int64_t minimum, int64_t maximum) const;
};

// Reads `text` (from `source`): the first non-blank line is the header; a row whose field
// count differs from the header's is refused with its line. Carriage returns are dropped.
CsvTable parse_csv(const std::string& text, const std::string& source);
// The same from a file; UserError when it cannot be read.
CsvTable read_csv(const std::string& path);

}  // namespace burst
