#pragma once
// Energy in `burst plan` and `burst sim` reports (docs/energy.md): the step's joules per
// iteration and per sample, in total and per device, the clocks an energy objective chose,
// and the time-energy frontier (text, JSON and SVG).
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "burst/planner/auto_planner.h"
#include "burst/planner/clock_search.h"
#include "burst/timing/energy.h"

namespace burst::cli {

// What an energy objective did to the plan: its clocks and the step against all clocks at
// the maximum.
// --objective energy's choice (planner::EnergyChoice) and its clocks in words.
struct ClockReport : planner::EnergyChoice {
  std::vector<std::string> clock_groups;  // "ranks 0-7: 1200 MHz", one per distinct clock
};

// One line per distinct clock: the ranks at it (ranges) and the clock.
std::vector<std::string> describe_clocks(const std::vector<double>& rank_clocks_mhz);

// "12.3 J, 0.0481 J per sample (compute 10.1 J, communication 0.5 J, idle 1.7 J); per device
// 0.30-0.45 J", with the background's part when there is one; "not modelled (...)" without
// a power model. Per sample: the foreground's energy (all but the background kernels') per
// sample of the global batch.
std::string energy_text(const timing::StepEnergy& energy, int64_t samples);
// {"energy_j", "energy_j_per_sample", "compute_j", "communication_j", "idle_j",
// "background_j", "devices": [{"rank", "energy_j", ...}]}; null when not known.
nlohmann::json energy_json(const timing::StepEnergy& energy, int64_t samples);

void print_clock_report(const ClockReport& report, std::ostream& out);
nlohmann::json clock_report_json(const ClockReport& report);

void print_frontier(const std::vector<planner::FrontierPoint>& frontier, std::ostream& out);
nlohmann::json frontier_json(const std::vector<planner::FrontierPoint>& frontier);
// Energy (J) against iteration time (ms), the frontier's points joined, ends labelled.
std::string render_frontier_svg(const std::string& title, const std::vector<planner::FrontierPoint>& frontier);

}  // namespace burst::cli
