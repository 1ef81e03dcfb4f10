// The picture of `burst cluster-sim --svg`: per policy, the JCT distribution (a CDF over a
// log time axis) and the GPUs held over time.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "cluster_sim_report.h"
#include "plan_svg.h"

namespace burst::cli {
namespace {

constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
constexpr double kPanelWidth = 460, kPanelHeight = 300, kMargin = 56, kTop = 48;

struct Panel {
  double left;
  double x_min, x_max;  // x_log: log10 of seconds
  double y_max;
  bool x_log;
  double x(double value) const {
    const double v = x_log ? std::log10(std::max(value, 1.0)) : value;
    return left + kMargin + (v - x_min) / std::max(1e-9, x_max - x_min) * (kPanelWidth - kMargin - 10);
  }
  double y(double value) const { return kTop + kPanelHeight - value / y_max * (kPanelHeight - 20); }
};

std::string axes(const Panel& panel, const std::string& title, const std::string& x_label, const std::string& y_label) {
  const double x0 = panel.left + kMargin, y0 = kTop + kPanelHeight;
  std::string svg = fmt::format(
      "<text x=\"{:.0f}\" y=\"{:.0f}\" font-size=\"14\">{}</text>\n"
      "<line x1=\"{:.0f}\" y1=\"{:.0f}\" x2=\"{:.0f}\" y2=\"{:.0f}\" stroke=\"black\"/>\n"
      "<line x1=\"{:.0f}\" y1=\"{:.0f}\" x2=\"{:.0f}\" y2=\"{:.0f}\" stroke=\"black\"/>\n"
      "<text x=\"{:.0f}\" y=\"{:.0f}\" font-size=\"12\">{}</text>\n"
      "<text x=\"{:.0f}\" y=\"{:.0f}\" font-size=\"12\" transform=\"rotate(-90 {:.0f} {:.0f})\">{}</text>\n",
      x0, kTop - 16, svg_escape(title), x0, y0, panel.left + kPanelWidth - 10, y0, x0, y0, x0, kTop, x0 + 100,
      y0 + 36, svg_escape(x_label), panel.left + 14, y0 - 60, panel.left + 14, y0 - 60, svg_escape(y_label));
  for (int tick = 0; tick <= 4; ++tick) {
    const double value = panel.y_max * tick / 4;
    svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" font-size=\"10\" text-anchor=\"end\">{:g}</text>\n", x0 - 4,
                       panel.y(value) + 3, std::round(value * 100) / 100);
  }
  for (double v = std::ceil(panel.x_min); v <= panel.x_max + 1e-9; v += panel.x_log ? 1 : (panel.x_max - panel.x_min) / 4) {
    const double at = panel.x_log ? std::pow(10, v) : v;
    const std::string label = panel.x_log ? fmt::format("{:g}", at) : fmt::format("{:.1f}", at / 3600);
    svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" font-size=\"10\" text-anchor=\"middle\">{}</text>\n",
                       panel.x(at), y0 + 14, label);
  }
  return svg;
}

std::string polyline(const std::vector<std::pair<double, double>>& points, const char* colour) {
  std::string svg = fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"", colour);
  for (const auto& [x, y] : points) svg += fmt::format("{:.1f},{:.1f} ", x, y);
  return svg + "\"/>\n";
}

std::string jct_panel(const std::vector<cluster_sim::MultiTenantResult>& results) {
  double longest = 10;
  for (const auto& result : results) {
    for (const auto& job : result.jobs) longest = std::max(longest, job.jct_s());
  }
  const Panel panel{0, 1, std::ceil(std::log10(longest)), 1, true};
  std::string svg = axes(panel, "JCT distribution", "job completion time (s, log)", "fraction of jobs");
  for (size_t p = 0; p < results.size(); ++p) {
    std::vector<double> jcts;
    for (const auto& job : results[p].jobs) jcts.push_back(job.jct_s());
    std::sort(jcts.begin(), jcts.end());
    std::vector<std::pair<double, double>> points;
    const size_t stride = std::max<size_t>(1, jcts.size() / 400);  // at most ~400 points
    for (size_t i = 0; i < jcts.size(); i += stride) {
      points.emplace_back(panel.x(jcts[i]), panel.y(static_cast<double>(i + 1) / jcts.size()));
    }
    if (!jcts.empty()) points.emplace_back(panel.x(jcts.back()), panel.y(1));
    svg += polyline(points, kColours[p % 6]);
  }
  return svg;
}

std::string usage_panel(const std::vector<cluster_sim::MultiTenantResult>& results, int gpus) {
  double end = 1;
  for (const auto& result : results) {
    if (!result.usage.empty()) end = std::max(end, result.usage.back().time_s);
  }
  const Panel panel{kPanelWidth + 20, 0, end, 1, false};
  std::string svg = axes(panel, "GPUs held", "time (h)", "share of GPUs");
  for (size_t p = 0; p < results.size(); ++p) {
    std::vector<std::pair<double, double>> points;
    const auto& usage = results[p].usage;
    const size_t stride = std::max<size_t>(1, usage.size() / 800);
    for (size_t i = 0; i < usage.size(); i += stride) {
      points.emplace_back(panel.x(usage[i].time_s), panel.y(static_cast<double>(usage[i].allocated) / gpus));
    }
    svg += polyline(points, kColours[p % 6]);
  }
  return svg;
}

}  // namespace

std::string cluster_sim_svg(const ClusterSimSetting& setting, const std::vector<cluster_sim::MultiTenantResult>& results) {
  const double width = 2 * kPanelWidth + 40, height = kTop + kPanelHeight + 70 + 18 * static_cast<double>(results.size());
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" font-family=\"sans-serif\">\n"
      "<text x=\"10\" y=\"18\" font-size=\"13\">{}</text>\n",
      width, height,
      svg_escape(fmt::format("{} on {} GPUs, job model {}", setting.trace, setting.gpus, setting.job_model)));
  svg += jct_panel(results);
  svg += usage_panel(results, setting.gpus);
  for (size_t p = 0; p < results.size(); ++p) {
    const double y = kTop + kPanelHeight + 56 + 18 * static_cast<double>(p);
    svg += fmt::format(
        "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"14\" height=\"4\" fill=\"{}\"/><text x=\"{:.0f}\" y=\"{:.0f}\" "
        "font-size=\"12\">{}: average JCT {:.0f} s, utilisation {:.1f}%</text>\n",
        kMargin, y - 4, kColours[p % 6], kMargin + 20, y, svg_escape(results[p].policy), results[p].avg_jct_s,
        100 * results[p].utilisation);
  }
  return svg + "</svg>\n";
}

}  // namespace burst::cli
