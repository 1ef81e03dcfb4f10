#include "burst/cost/power.h"

#include <cmath>
#include <fstream>

#include <gtest/gtest.h>

#include "burst/cost/fake_cost_model.h"
#include "burst/cost/power_fit.h"
#include "burst/util/error.h"

namespace burst::cost {
namespace power_test {

TEST(Power, ComputeCommunicationAndIdle) {
  const PowerSpec spec = round_power_spec();
  EXPECT_DOUBLE_EQ(compute_power_w(spec, 1.0, 1.0), 500);     // compute-bound at full clock: the maximum
  EXPECT_DOUBLE_EQ(compute_power_w(spec, 0.0, 1.0), 300);     // memory-bound: idle + 0.5 x 400
  EXPECT_DOUBLE_EQ(compute_power_w(spec, 1.0, 0.5), 200);     // idle + 400 x 0.25
  EXPECT_DOUBLE_EQ(communication_power_w(spec), 200);         // idle + 0.25 x 400
  EXPECT_DOUBLE_EQ(clocked_time(2.0, 1.0, 0.5), 4.0);         // compute-bound: twice as long at half clock
  EXPECT_DOUBLE_EQ(clocked_time(2.0, 0.0, 0.5), 2.0);         // memory-bound: unchanged
  EXPECT_DOUBLE_EQ(clocked_time(2.0, 0.5, 0.5), 3.0);
}

TEST(Power, CapGivesTheDerivedClock) {
  PowerSpec spec = round_power_spec();
  // 300 W = 100 + 400 x r^2  =>  r = sqrt(0.5)
  EXPECT_NEAR(highest_clock_under_cap(spec, 1.0, 300), std::sqrt(0.5), 1e-12);
  EXPECT_DOUBLE_EQ(highest_clock_under_cap(spec, 0.0, 300), 1.0);  // memory-bound work draws 300 W already
  EXPECT_DOUBLE_EQ(highest_clock_under_cap(spec, 1.0, 110), 0.2);  // below the minimum clock's power: the minimum
  EXPECT_DOUBLE_EQ(effective_clock(spec, 1.0, 0.5, 300), 0.5);     // a lower set clock wins
  EXPECT_DOUBLE_EQ(effective_clock(spec, 1.0, 1.0, 0), 1.0);       // no cap
  spec.clock_independent_share = 0.5;
  // 300 = 100 + 400 x (0.5 + 0.5 r^2)  =>  r = 0
  EXPECT_DOUBLE_EQ(highest_clock_under_cap(spec, 1.0, 300), 0.2);
  // 400 = 100 + 400 x (0.5 + 0.5 r^2)  =>  r^2 = 0.5
  EXPECT_NEAR(highest_clock_under_cap(spec, 1.0, 400), std::sqrt(0.5), 1e-12);
}

TEST(Power, BadCapsAndClocksAreUserErrors) {
  const PowerSpec spec = round_power_spec();
  EXPECT_THROW(check_power_cap(spec, 50), UserError);
  EXPECT_THROW(check_power_cap(spec, 600), UserError);
  EXPECT_NO_THROW(check_power_cap(spec, 0));
  EXPECT_NO_THROW(check_power_cap(spec, 500));
  EXPECT_THROW(clock_ratio_of(spec, 100), UserError);
  EXPECT_DOUBLE_EQ(clock_ratio_of(spec, 500), 0.5);
  const auto steps = clock_ratio_steps(spec, 0.25);
  ASSERT_EQ(steps.size(), 5u);  // 1, 0.75, 0.5, 0.25, 0.2
  EXPECT_DOUBLE_EQ(steps.back(), 0.2);
}

TEST(Power, CatalogHasTheBoardMaxima) {
  EXPECT_EQ(catalog_power("a100")->max_w, 400);
  EXPECT_EQ(catalog_power("h100-sxm")->max_w, 700);
  EXPECT_EQ(catalog_power("h200")->max_w, 700);
  EXPECT_EQ(catalog_power("v100")->max_w, 300);
  EXPECT_FALSE(catalog_power("cpu").has_value());
}

TEST(PowerFit, HeldOutRowsOfEveryZeusGpuWithinTenPercent) {
  for (const std::string kind : {"v100", "a40", "p100", "rtx6000"}) {
    const auto rows = load_power_trace(std::string(BURST_ZEUS_TRACE_DIR) + "/summary_power_" + kind + ".csv");
    const PowerFit fit = fit_power_trace(rows, power_trace_device(kind));
    EXPECT_GE(fit.held_out, 100) << kind;
    EXPECT_LE(fit.held_out_median_time_error, 0.10) << kind;
    EXPECT_LE(fit.held_out_median_power_error, 0.10) << kind;
  }
}

TEST(PowerFit, MalformedLineNamesFileAndLine) {
  const std::string path = ::testing::TempDir() + "/bad_power_trace.csv";
  std::ofstream(path) << "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
                      << "c,s,8,sgd,100,10,90\nc,s,8,sgd,abc,10,90\n";
  try {
    load_power_trace(path);
    FAIL() << "no error";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("bad_power_trace.csv:3"), std::string::npos) << error.what();
  }
}

}  // namespace power_test
}  // namespace burst::cost
