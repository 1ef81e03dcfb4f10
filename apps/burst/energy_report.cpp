#include "energy_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "plan_svg.h"

namespace burst::cli {
namespace {

std::string rank_ranges(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    text += (text.empty() ? "" : ",") + (i == j ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]));
    i = j + 1;
  }
  return text;
}

}  // namespace

std::vector<std::string> describe_clocks(const std::vector<double>& rank_clocks_mhz) {
  std::vector<std::pair<double, std::vector<int>>> by_clock;
  for (size_t rank = 0; rank < rank_clocks_mhz.size(); ++rank) {
    const double clock = rank_clocks_mhz[rank];
    auto found = std::find_if(by_clock.begin(), by_clock.end(), [&](const auto& entry) { return entry.first == clock; });
    if (found == by_clock.end()) found = by_clock.emplace(by_clock.end(), clock, std::vector<int>{});
    found->second.push_back(static_cast<int>(rank));
  }
  std::vector<std::string> lines;
  for (const auto& [clock, ranks] : by_clock) lines.push_back(fmt::format("ranks {}: {:.0f} MHz", rank_ranges(ranks), clock));
  return lines;
}

std::string energy_text(const timing::StepEnergy& energy, int64_t samples) {
  if (!energy.known) return "not modelled (a device kind without a power model)";
  double least = 1e300, most = 0;
  for (const timing::DeviceEnergy& device : energy.devices) {
    least = std::min(least, device.total_j());
    most = std::max(most, device.total_j());
  }
  return fmt::format("{:.4g} J, {:.4g} J per sample (compute {:.4g} J, communication {:.4g} J, idle {:.4g} J{}); per "
                     "device {:.4g}-{:.4g} J",
                     energy.total_j, (energy.total_j - energy.background_j) / static_cast<double>(samples), energy.compute_j,
                     energy.communication_j, energy.idle_j,
                     energy.background_j > 0 ? fmt::format(", background {:.4g} J", energy.background_j) : "", least,
                     most);
}

nlohmann::json energy_json(const timing::StepEnergy& energy, int64_t samples) {
  if (!energy.known) return nullptr;
  nlohmann::json devices = nlohmann::json::array();
  for (size_t rank = 0; rank < energy.devices.size(); ++rank) {
    const timing::DeviceEnergy& device = energy.devices[rank];
    devices.push_back({{"rank", rank}, {"energy_j", device.total_j()}, {"compute_j", device.compute_j},
                       {"communication_j", device.communication_j}, {"idle_j", device.idle_j},
                       {"background_j", device.background_j}, {"busy_s", device.busy_s}});
  }
  return {{"energy_j", energy.total_j},
          {"energy_j_per_sample", (energy.total_j - energy.background_j) / static_cast<double>(samples)},
          {"compute_j", energy.compute_j},
          {"communication_j", energy.communication_j},
          {"idle_j", energy.idle_j},
          {"background_j", energy.background_j},
          {"devices", std::move(devices)}};
}

void print_clock_report(const ClockReport& report, std::ostream& out) {
  const planner::ClockChoice& choice = report.choice;
  const double saved = choice.full_clock_energy_j > 0 ? 1 - choice.energy_j / choice.full_clock_energy_j : 0;
  out << fmt::format("objective:      energy, the step within {:g}% of the fastest plan's {:.3f} ms: {} plan, {:.3f} ms "
                     "and {:.4g} J at full clocks -> {:.3f} ms ({:+.2f}% on the fastest) and {:.4g} J ({:.1f}% less); {} "
                     "clock groups, {} steps timed\n",
                     report.max_slowdown * 100, report.fastest_time_s * 1e3, report.strategy,
                     choice.full_clock_time_s * 1e3, choice.full_clock_energy_j, choice.time_s * 1e3,
                     (choice.time_s / report.fastest_time_s - 1) * 100, choice.energy_j, saved * 100, choice.groups,
                     choice.evaluations);
  for (const auto& [strategy, energy] : report.strategies) out << "  " << strategy << ": " << energy << '\n';
  if (report.clock_groups.empty()) out << "clocks:         every rank at its maximum\n";
  for (const std::string& line : report.clock_groups) out << "clocks:         " << line << '\n';
}

nlohmann::json clock_report_json(const ClockReport& report) {
  const planner::ClockChoice& choice = report.choice;
  return {{"objective", "energy"},
          {"max_slowdown", report.max_slowdown},
          {"fastest_time_s", report.fastest_time_s},
          {"strategy", report.strategy},
          {"full_clock_time_s", choice.full_clock_time_s},
          {"full_clock_energy_j", choice.full_clock_energy_j},
          {"time_s", choice.time_s},
          {"energy_j", choice.energy_j},
          {"clock_groups", choice.groups},
          {"steps_timed", choice.evaluations},
          {"rank_clocks_mhz", choice.plan.rank_clocks_mhz}};
}

void print_frontier(const std::vector<planner::FrontierPoint>& frontier, std::ostream& out) {
  out << "\ntime-energy frontier (clock choices of this plan):\n";
  out << fmt::format("  {:>12} {:>12} {:>10} {:>10}  {}\n", "iteration ms", "energy J", "slower", "energy", "from");
  const planner::FrontierPoint& fastest = frontier.front();
  for (const planner::FrontierPoint& point : frontier) {
    const std::string from = point.rank_clocks_mhz.empty() ? "all clocks at maximum"
                             : point.max_slowdown < 0
                                 ? fmt::format("every rank at {:.0f} MHz", point.rank_clocks_mhz.front())
                                 : fmt::format("search within {:g}%", point.max_slowdown * 100);
    out << fmt::format("  {:>12.3f} {:>12.4g} {:>9.2f}% {:>9.1f}%  {}\n", point.time_s * 1e3, point.energy_j,
                       (point.time_s / fastest.time_s - 1) * 100, (point.energy_j / fastest.energy_j - 1) * 100, from);
  }
}

nlohmann::json frontier_json(const std::vector<planner::FrontierPoint>& frontier) {
  nlohmann::json points = nlohmann::json::array();
  for (const planner::FrontierPoint& point : frontier) {
    points.push_back({{"time_s", point.time_s}, {"energy_j", point.energy_j},
                      {"max_slowdown", point.max_slowdown < 0 ? nlohmann::json(nullptr) : nlohmann::json(point.max_slowdown)},
                      {"rank_clocks_mhz", point.rank_clocks_mhz}});
  }
  return points;
}

std::string render_frontier_svg(const std::string& title, const std::vector<planner::FrontierPoint>& frontier) {
  constexpr double kWidth = 640, kHeight = 420, kLeft = 80, kRight = 30, kTop = 50, kBottom = 60;
  double t0 = 1e300, t1 = 0, e0 = 1e300, e1 = 0;
  for (const auto& point : frontier) {
    t0 = std::min(t0, point.time_s * 1e3), t1 = std::max(t1, point.time_s * 1e3);
    e0 = std::min(e0, point.energy_j), e1 = std::max(e1, point.energy_j);
  }
  if (!(t1 > t0)) t1 = t0 + 1e-3;
  if (!(e1 > e0)) e1 = e0 + 1e-3;
  auto x = [&](double ms) { return kLeft + (ms - t0) / (t1 - t0) * (kWidth - kLeft - kRight); };
  auto y = [&](double j) { return kHeight - kBottom - (j - e0) / (e1 - e0) * (kHeight - kTop - kBottom); };
  std::string body = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"24\" font-size=\"15\">{3}</text>\n",
      kWidth, kHeight, kLeft, svg_escape(title));
  body += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n"
                      "<line x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{1}\" stroke=\"black\"/>\n",
                      kLeft, kHeight - kBottom, kWidth - kRight, kTop);
  body += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">iteration time, ms ({:.3f} to {:.3f})</text>\n",
                      (kLeft + kWidth - kRight) / 2, kHeight - 20, t0, t1);
  body += fmt::format("<text x=\"20\" y=\"{}\" transform=\"rotate(-90 20 {})\" text-anchor=\"middle\">energy per "
                      "iteration, J ({:.4g} to {:.4g})</text>\n",
                      (kTop + kHeight - kBottom) / 2, (kTop + kHeight - kBottom) / 2, e0, e1);
  std::string line;
  for (const auto& point : frontier) line += fmt::format("{:.1f},{:.1f} ", x(point.time_s * 1e3), y(point.energy_j));
  body += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\"/>\n", line);
  for (const auto& point : frontier) {
    body += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"#1f77b4\"/>\n", x(point.time_s * 1e3),
                        y(point.energy_j));
  }
  const auto& fastest = frontier.front();
  const auto& least = frontier.back();
  body += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">fastest: {:.3f} ms, {:.4g} J</text>\n", x(fastest.time_s * 1e3) + 8,
                      y(fastest.energy_j) + 4, fastest.time_s * 1e3, fastest.energy_j);
  body += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">least energy: {:.3f} ms, {:.4g} J</text>\n",
                      x(least.time_s * 1e3) - 8, y(least.energy_j) - 8, least.time_s * 1e3, least.energy_j);
  return body + "</svg>\n";
}

}  // namespace burst::cli
