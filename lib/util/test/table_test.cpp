#include "burst/util/table.h"

#include <sstream>

#include <gtest/gtest.h>

namespace burst {
namespace {

TEST(TextTable, PadsColumnsAndRightAlignsNumbers) {
  TextTable table({{"name", TextTable::Align::Left}, {"params", TextTable::Align::Right}});
  table.add_row({"fc", "4,097,000"});
  table.add_row({"conv1", "9,408"});
  table.add_rule();
  table.add_row({"total", "4,106,408"});
  std::ostringstream out;
  table.print(out);
  // Widths: "total"/"conv1" = 5, "4,106,408" = 9; two spaces between columns.
  EXPECT_EQ(out.str(),
            "name      params\n"
            "----------------\n"
            "fc     4,097,000\n"
            "conv1      9,408\n"
            "----------------\n"
            "total  4,106,408\n");
}

}  // namespace
}  // namespace burst
