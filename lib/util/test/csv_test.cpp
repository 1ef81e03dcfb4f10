#include "burst/util/csv.h"

#include <gtest/gtest.h>

#include "burst/util/error.h"

namespace burst {
namespace csv_test {

std::string error_of(const std::string& text) {
  try {
    const CsvTable table = parse_csv(text, "t.csv");
    table.number(table.rows.at(0), table.column("a"), 0, 10);
    table.whole(table.rows.at(0), table.column("b"), 1, 4);
  } catch (const UserError& error) {
    return error.what();
  }
  return "";
}

TEST(Csv, ReadsRowsWithTheirLines) {
  const CsvTable table = parse_csv("a,b\r\n\n1.5,2\n,x\n", "t.csv");
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[0].line, 3);
  EXPECT_EQ(table.rows[1].fields, (std::vector<std::string>{"", "x"}));
  EXPECT_DOUBLE_EQ(table.number(table.rows[0], 0, 0), 1.5);
  EXPECT_EQ(table.where(table.rows[1]), "t.csv:4");
}

TEST(Csv, ErrorsNameTheFileLineColumnAndValue) {
  EXPECT_EQ(error_of("a,b\n1,2,3\n"), "t.csv:2: expected 2 fields (a, b), got 3");
  EXPECT_EQ(error_of("a,b\n11,2\n"), "t.csv:2: a must be a number in [0, 10], got '11'");
  EXPECT_EQ(error_of("a,b\nnan,2\n"), "t.csv:2: a must be a number in [0, 10], got 'nan'");
  EXPECT_EQ(error_of("a,b\n1,2.5\n"), "t.csv:2: b must be a whole number in [1, 4], got '2.5'");
  EXPECT_EQ(error_of("c\n1\n"), "t.csv:1: no column 'a' (columns: c)");
  EXPECT_EQ(error_of(""), "t.csv: empty (expected a header line)");
}

TEST(Csv, FieldsThatAreNotUtf8AreRefusedWithTheFileLineAndColumn) {
  EXPECT_EQ(error_of("a,b\n1,job\xfa" "7\n"), "t.csv:2: field 2 (b) is not UTF-8: 'job\\xfa7'");
  EXPECT_EQ(error_of("a,b\n\n\xc3\x28,2\n"), "t.csv:3: field 1 (a) is not UTF-8: '\\xc3('");
  EXPECT_EQ(error_of("a,b\xed\xa0\x80\n1,2\n"), "t.csv:1: field 2 is not UTF-8: 'b\\xed\\xa0\\x80'");
  EXPECT_EQ(error_of("a,b\n1,2\n3,caf\xc3\xa9\n"), "");  // UTF-8 beyond ASCII is fine
}

}  // namespace csv_test
}  // namespace burst
