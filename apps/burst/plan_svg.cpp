#include "plan_svg.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::cli {

std::string svg_escape(const std::string& text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': escaped += "&amp;"; break;
      case '<': escaped += "&lt;"; break;
      case '>': escaped += "&gt;"; break;
      case '"': escaped += "&quot;"; break;
      case '\'': escaped += "&#39;"; break;
      default: escaped += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
    }
  }
  return escaped;
}

namespace {

// Page geometry in SVG user units (pixels at 100% zoom).
constexpr double kWidth = 1200;
constexpr double kLeft = 130;  // room for row labels and axis numbers
constexpr double kRight = 30;
constexpr double kPlotWidth = kWidth - kLeft - kRight;

// Colours (Tableau 10); idle time is the row background.
struct KindStyle {
  ActivityKind kind;
  const char* css_class;
  const char* legend;
  const char* colour;
};
constexpr KindStyle kKinds[] = {
    {ActivityKind::Forward, "forward", "forward", "#4e79a7"},
    {ActivityKind::Backward, "backward", "backward", "#f28e2b"},
    {ActivityKind::Transfer, "transfer", "transfer (input re-shard)", "#59a14f"},
    {ActivityKind::Allreduce, "allreduce", "all-reduce (weight gradients)", "#e15759"},
    {ActivityKind::Update, "update", "update (optimizer step)", "#b07aa1"},
};
constexpr const char* kIdleColour = "#e8e8e8";
// Lines of scaling charts, in series order (Tableau 10).
constexpr const char* kSeriesColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                         "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};
constexpr size_t kSeriesStyles = std::size(kSeriesColours);

const KindStyle& style_of(ActivityKind kind) {
  for (const KindStyle& style : kKinds) {
    if (style.kind == kind) return style;
  }
  BURST_ASSERT(false, "every activity kind has a style");
  return kKinds[0];
}

// A step for about `target` ticks over [0, span]: 1, 2 or 5 times a power of ten, at least
// `minimum` (1 for integer axes).
double nice_step(double span, int target, double minimum) {
  if (!(span > 0) || !std::isfinite(span)) return std::max(minimum, 1.0);
  const double raw = span / target;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * power;
  for (const double factor : {1.0, 2.0, 5.0}) {
    if (raw <= factor * power) {
      step = factor * power;
      break;
    }
  }
  return std::max(step, minimum);
}

// The SVG text under construction; every method escapes the text it is given.
class SvgWriter {
 public:
  void text(double x, double y, const std::string& content, const char* anchor = "start",
            const char* css_class = "label") {
    fmt::format_to(std::back_inserter(body_),
                   "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\" class=\"{}\">{}</text>\n", x, y,
                   anchor, css_class, svg_escape(content));
  }
  // A rectangle with a tooltip (an SVG <title>; empty: none).
  void rect(double x, double y, double width, double height, const char* css_class,
            const std::string& tooltip = "") {
    fmt::format_to(std::back_inserter(body_),
                   "<rect class=\"{}\" x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\"",
                   css_class, x, y, std::max(width, 0.0), std::max(height, 0.0));
    if (tooltip.empty()) {
      body_ += "/>\n";
    } else {
      fmt::format_to(std::back_inserter(body_), "><title>{}</title></rect>\n", svg_escape(tooltip));
    }
  }
  void line(double x1, double y1, double x2, double y2, const char* css_class) {
    fmt::format_to(std::back_inserter(body_),
                   "<line class=\"{}\" x1=\"{:.2f}\" y1=\"{:.2f}\" x2=\"{:.2f}\" y2=\"{:.2f}\"/>\n",
                   css_class, x1, y1, x2, y2);
  }
  void raw(const std::string& element) { body_ += element; }

  // The document: `height` tall, kWidth wide, with the shared style sheet.
  std::string finish(double height) const {
    std::string css =
        "text{font-family:sans-serif;font-size:12px;fill:#222}"
        ".title{font-size:15px;font-weight:bold}.heading{font-size:13px;font-weight:bold}"
        ".small{font-size:10px;fill:#555}"
        ".axis{stroke:#444;stroke-width:1}.grid{stroke:#ffffff;stroke-width:1;opacity:0.7}"
        ".gridline{stroke:#cccccc;stroke-width:0.5}"
        ".bar{fill:#4e79a7}.idle{fill:";
    css += kIdleColour;
    css += "}";
    for (const KindStyle& style : kKinds) css += fmt::format(".{}{{fill:{}}}", style.css_class, style.colour);
    css +=
        "";
    for (size_t s = 0; s < kSeriesStyles; ++s) {
      css += fmt::format(".series{0}{{stroke:{1};fill:none;stroke-width:2}}.series{0}-point{{fill:{1}}}", s,
                         kSeriesColours[s]);
    }
    return fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
        "viewBox=\"0 0 {0:.0f} {1:.0f}\">\n<style>{2}</style>\n"
        "<rect x=\"0\" y=\"0\" width=\"{0:.0f}\" height=\"{1:.0f}\" fill=\"#ffffff\"/>\n{3}</svg>\n",
        kWidth, std::ceil(height), css, body_);
  }

 private:
  std::string body_;
};

// (a) Devices per layer, a bar per layer; returns the y below the chart.
double draw_device_bars(SvgWriter& svg, const Plan& plan, const PlanEvaluation& evaluation,
                        const graph::Graph& graph, double top) {
  constexpr double kHeight = 160;
  svg.text(kLeft, top, "Devices per layer", "start", "heading");
  const double plot_top = top + 14;
  const double bottom = plot_top + kHeight;
  int most = 1;
  for (const LayerPlacement& placement : plan.layers) {
    most = std::max(most, static_cast<int>(placement.shards.size()));
  }
  const double y_step = nice_step(most, 5, 1);
  const double y_max = std::ceil(most / y_step) * y_step;
  auto y_of = [&](double devices) { return bottom - devices / y_max * kHeight; };
  for (double tick = 0; tick <= y_max + 1e-9; tick += y_step) {
    svg.line(kLeft, y_of(tick), kLeft + kPlotWidth, y_of(tick), "gridline");
    svg.text(kLeft - 6, y_of(tick) + 4, fmt::format("{:g}", tick), "end");
  }
  const auto layers = static_cast<int>(plan.layers.size());
  const double slot = kPlotWidth / std::max(layers, 1);
  const double gap = slot >= 4 ? slot * 0.15 : 0;
  for (int id = 0; id < layers; ++id) {
    const auto& placement = plan.layers[static_cast<size_t>(id)];
    const auto devices = static_cast<int>(placement.shards.size());
    const std::string op = graph::op_name(graph.layer(id).op());
    int64_t per_device = 0;
    if (static_cast<size_t>(id) < evaluation.layers.size()) {
      per_device = evaluation.layers[static_cast<size_t>(id)].per_device_batch;
    }
    svg.rect(kLeft + id * slot + gap / 2, y_of(devices), slot - gap, bottom - y_of(devices), "bar",
             fmt::format("#{} {} ({}): {} device{}, up to {} samples each", id, placement.layer, op, devices,
                         devices == 1 ? "" : "s", per_device));
  }
  svg.line(kLeft, bottom, kLeft + kPlotWidth, bottom, "axis");
  svg.line(kLeft, plot_top, kLeft, bottom, "axis");
  const double x_step = nice_step(std::max(layers - 1, 1), 10, 1);
  for (double tick = 0; tick < layers; tick += x_step) {
    svg.text(kLeft + (tick + 0.5) * slot, bottom + 14, fmt::format("{:g}", tick), "middle");
  }
  svg.text(kLeft + kPlotWidth / 2, bottom + 30, "layer id (graph order)", "middle", "small");
  svg.text(kLeft - 40, plot_top + kHeight / 2, "devices", "end", "small");
  return bottom + 44;
}

std::string rank_label(const TimelineRow& row) {
  if (row.first_rank == row.last_rank) return fmt::format("rank {}", row.first_rank);
  if (row.identical) return fmt::format("ranks {}-{}", row.first_rank, row.last_rank);
  return fmt::format("ranks {}-{} (shows {})", row.first_rank, row.last_rank, row.shown_rank);
}

// The Gantt chart's legend: the four activity kinds and idle time.
void draw_timeline_legend(SvgWriter& svg, double top) {
  double legend_x = kLeft;
  const double legend_y = top + 12;
  for (const KindStyle& style : kKinds) {
    svg.rect(legend_x, legend_y, 14, 10, style.css_class);
    svg.text(legend_x + 18, legend_y + 9, style.legend, "start", "small");
    legend_x += 36 + 5.5 * std::char_traits<char>::length(style.legend);  // ~5.5 units a character at 10 px
  }
  svg.rect(legend_x, legend_y, 14, 10, "idle");
  svg.text(legend_x + 18, legend_y + 9, "idle (free for a background job)", "start", "small");
}

// Where the Gantt chart's rows and its time axis lie.
struct GanttFrame {
  std::vector<TimelineRow> rows;
  double row_height = 0;
  double lane_area = 0;  // a row's height less the 3 units between rows
  double rows_top = 0;
  double rows_bottom = 0;
  double span = 0;  // seconds the axis covers
  double x_of(double seconds) const { return kLeft + seconds / span * kPlotWidth; }
};

GanttFrame gantt_frame(const PlanEvaluation& evaluation, const std::vector<std::vector<Activity>>& timelines,
                       double top) {
  GanttFrame frame;
  frame.rows = timeline_rows(timelines);
  frame.row_height = frame.rows.size() <= 8 ? 30 : frame.rows.size() <= 24 ? 20 : 12;
  frame.lane_area = frame.row_height - 3;
  frame.span = evaluation.iteration_time.s();
  for (const auto& timeline : timelines) {
    for (const Activity& activity : timeline) frame.span = std::max(frame.span, activity.end_s);
  }
  if (!(frame.span > 0)) frame.span = 1e-9;  // an empty model: nothing to draw, keep the axis finite
  frame.rows_top = top + 32;
  frame.rows_bottom = frame.rows_top + static_cast<double>(frame.rows.size()) * frame.row_height;
  return frame;
}

// Each row's idle background and label, and the time axis below them.
void draw_rows_and_axis(SvgWriter& svg, const GanttFrame& frame) {
  for (size_t i = 0; i < frame.rows.size(); ++i) {
    const double y = frame.rows_top + static_cast<double>(i) * frame.row_height;
    svg.rect(kLeft, y, kPlotWidth, frame.lane_area, "idle");
    svg.text(kLeft - 6, y + frame.lane_area / 2 + 4, rank_label(frame.rows[i]), "end",
             frame.row_height < 16 ? "small" : "label");
  }
  const double step_ms = nice_step(frame.span * 1e3, 10, 0);
  for (double tick = 0; tick <= frame.span * 1e3 * (1 + 1e-9); tick += step_ms) {
    const double x = frame.x_of(tick / 1e3);
    svg.line(x, frame.rows_top, x, frame.rows_bottom, "grid");
    svg.line(x, frame.rows_bottom, x, frame.rows_bottom + 4, "axis");
    svg.text(x, frame.rows_bottom + 16, fmt::format("{:g}", tick), "middle");
  }
  svg.line(kLeft, frame.rows_bottom, kLeft + kPlotWidth, frame.rows_bottom, "axis");
}

// Lanes within a row: compute on the top half, transfers and all-reduces a quarter each.
void draw_activities(SvgWriter& svg, const Plan& plan, const std::vector<std::vector<Activity>>& timelines,
                     const GanttFrame& frame) {
  const double lane_area = frame.lane_area;
  for (size_t i = 0; i < frame.rows.size(); ++i) {
    const double y = frame.rows_top + static_cast<double>(i) * frame.row_height;
    for (const Activity& activity : timelines[static_cast<size_t>(frame.rows[i].shown_rank)]) {
      double lane_top = y, lane_height = lane_area / 2;
      if (activity.kind == ActivityKind::Transfer) {
        lane_top = y + lane_area / 2;
        lane_height = lane_area / 4;
      } else if (activity.kind == ActivityKind::Allreduce) {
        lane_top = y + lane_area * 3 / 4;
        lane_height = lane_area / 4;
      }
      const std::string& layer =
          activity.layer >= 0 && static_cast<size_t>(activity.layer) < plan.layers.size()
              ? plan.layers[static_cast<size_t>(activity.layer)].layer
              : std::string();
      const KindStyle& style = style_of(activity.kind);
      svg.rect(frame.x_of(activity.start_s), lane_top, frame.x_of(activity.end_s) - frame.x_of(activity.start_s),
               lane_height, style.css_class,
               fmt::format("{} {}: {:.3f}-{:.3f} ms", layer, activity_kind_name(activity.kind),
                           activity.start_s * 1e3, activity.end_s * 1e3));
    }
  }
}

// The notes under the chart; returns the y below them.
double draw_timeline_notes(SvgWriter& svg, const GanttFrame& frame, size_t ranks) {
  double y = frame.rows_bottom + 36;
  const bool squeezed =
      std::any_of(frame.rows.begin(), frame.rows.end(), [](const TimelineRow& row) { return !row.identical; });
  svg.text(
      kLeft, y,
      "Each row: compute (forward, backward) on top; below it the input transfers into the rank's layers "
      "and its weight-gradient all-reduces, which run beside compute.",
      "start", "small");
  y += 14;
  if (squeezed) {
    svg.text(kLeft, y,
             fmt::format("{} ranks have more than {} distinct timelines: each row stands for a group of "
                         "consecutive ranks and shows its first rank's timeline.",
                         ranks, kMaxTimelineRows),
             "start", "small");
  } else {
    svg.text(kLeft, y,
             fmt::format("{} ranks in {} rows: ranks with identical timelines share a row.", ranks,
                         frame.rows.size()),
             "start", "small");
  }
  return y + 16;
}

// (b) The Gantt chart of one iteration; returns the y below it.
double draw_timelines(SvgWriter& svg, const Plan& plan, const PlanEvaluation& evaluation,
                      const std::vector<std::vector<Activity>>& timelines, double top) {
  svg.text(kLeft, top, "One iteration per rank (time in ms)", "start", "heading");
  draw_timeline_legend(svg, top);
  const GanttFrame frame = gantt_frame(evaluation, timelines, top);
  draw_rows_and_axis(svg, frame);
  draw_activities(svg, plan, timelines, frame);
  return draw_timeline_notes(svg, frame, timelines.size());
}

}  // namespace

std::vector<TimelineRow> timeline_rows(const std::vector<std::vector<Activity>>& timelines, int max_rows) {
  BURST_ASSERT(max_rows >= 1, "timeline_rows needs at least one row");
  auto same = [](const std::vector<Activity>& a, const std::vector<Activity>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Activity& x, const Activity& y) {
      return x.start_s == y.start_s && x.end_s == y.end_s && x.kind == y.kind && x.layer == y.layer;
    });
  };
  std::vector<TimelineRow> rows;
  for (int rank = 0; rank < static_cast<int>(timelines.size()); ++rank) {
    if (!rows.empty() &&
        same(timelines[static_cast<size_t>(rows.back().shown_rank)], timelines[static_cast<size_t>(rank)])) {
      rows.back().last_rank = rank;
    } else {
      rows.push_back(TimelineRow{rank, rank, rank, true});
    }
  }
  const size_t count = rows.size();
  const auto limit = static_cast<size_t>(max_rows);
  if (count <= limit) return rows;
  // Group g takes rows [g * count / limit, (g + 1) * count / limit): sizes differ by one.
  std::vector<TimelineRow> groups;
  for (size_t g = 0; g < limit; ++g) {
    const size_t begin = g * count / limit, end = (g + 1) * count / limit;
    groups.push_back(TimelineRow{rows[begin].first_rank, rows[end - 1].last_rank, rows[begin].first_rank,
                                 end - begin == 1});
  }
  return groups;
}

std::string render_plan_svg(const Plan& plan, const PlanEvaluation& evaluation, const graph::Graph& graph) {
  BURST_ASSERT(plan.layers.size() == graph.size(), "render_plan_svg needs a validated plan");
  // Without timelines every rank of the plan's cluster is drawn idle.
  const std::vector<std::vector<Activity>> no_timelines(static_cast<size_t>(std::max(plan.devices, 1)));
  const auto& timelines = evaluation.timelines.empty() ? no_timelines : evaluation.timelines;

  SvgWriter svg;
  svg.text(kLeft, 24,
           fmt::format("{}: {} plan, global batch {}, {} device{}: {:.3f} ms per iteration", plan.model,
                       plan.strategy, plan.global_batch, timelines.size(), timelines.size() == 1 ? "" : "s",
                       evaluation.iteration_time.ms()),
           "start", "title");
  double y = draw_device_bars(svg, plan, evaluation, graph, 52);
  y = draw_timelines(svg, plan, evaluation, timelines, y + 10);
  return svg.finish(y);
}

namespace {

// A scaling chart's axes: devices on a log scale, values from 0 to y_max.
struct ScalingAxes {
  int most_devices = 1;
  double y_max = 0, y_step = 0;
  double plot_top = 0, bottom = 0;
  static constexpr double kHeight = 300;
  double x_of(int devices) const {
    if (most_devices == 1) return kLeft + kPlotWidth / 2;
    return kLeft + std::log2(static_cast<double>(devices)) / std::log2(static_cast<double>(most_devices)) * kPlotWidth;
  }
  double y_of(double value) const { return bottom - value / y_max * kHeight; }
};

// The legend, a series a line segment, four to a row, from `legend_y`.
void draw_scaling_legend(SvgWriter& svg, const ScalingChart& chart, double legend_y, size_t per_row) {
  for (size_t s = 0; s < chart.series.size(); ++s) {
    const double x = kLeft + 260.0 * static_cast<double>(s % per_row);
    const double y = legend_y + 16.0 * static_cast<double>(s / per_row);
    svg.line(x, y - 4, x + 24, y - 4, fmt::format("series{}", s % kSeriesStyles).c_str());
    svg.text(x + 30, y, chart.series[s].name, "start", "small");
  }
}

// Value grid lines, device ticks at the powers of two and the largest count, axes, labels.
void draw_scaling_axes(SvgWriter& svg, const ScalingChart& chart, const ScalingAxes& axes) {
  for (double tick = 0; tick <= axes.y_max * (1 + 1e-9); tick += axes.y_step) {
    svg.line(kLeft, axes.y_of(tick), kLeft + kPlotWidth, axes.y_of(tick), "gridline");
    svg.text(kLeft - 6, axes.y_of(tick) + 4, fmt::format("{:g}", tick), "end");
  }
  std::vector<int> ticks;
  for (const ScalingSeries& series : chart.series) {
    for (const auto& point : series.points) ticks.push_back(point.first);
  }
  std::sort(ticks.begin(), ticks.end());
  ticks.erase(std::unique(ticks.begin(), ticks.end()), ticks.end());
  for (const int devices : ticks) {
    const bool power_of_two = (devices & (devices - 1)) == 0;
    if (!power_of_two && devices != axes.most_devices) continue;
    svg.line(axes.x_of(devices), axes.bottom, axes.x_of(devices), axes.bottom + 4, "axis");
    svg.text(axes.x_of(devices), axes.bottom + 16, std::to_string(devices), "middle");
  }
  svg.line(kLeft, axes.bottom, kLeft + kPlotWidth, axes.bottom, "axis");
  svg.line(kLeft, axes.plot_top, kLeft, axes.bottom, "axis");
  svg.text(kLeft + kPlotWidth / 2, axes.bottom + 34, "devices (log scale)", "middle", "small");
  svg.text(kLeft - 50, axes.plot_top + ScalingAxes::kHeight / 2, chart.y_label, "end", "small");
}

// Each series as a line through its points, each point with its value as a tooltip.
void draw_scaling_series(SvgWriter& svg, const ScalingChart& chart, const ScalingAxes& axes) {
  for (size_t s = 0; s < chart.series.size(); ++s) {
    const ScalingSeries& series = chart.series[s];
    const size_t style = s % kSeriesStyles;
    std::string coordinates;
    for (const auto& [devices, value] : series.points) {
      coordinates += fmt::format("{:.2f},{:.2f} ", axes.x_of(devices), axes.y_of(value));
    }
    svg.raw(fmt::format("<polyline class=\"series{}\" points=\"{}\"/>\n", style, coordinates));
    for (const auto& [devices, value] : series.points) {
      svg.raw(fmt::format("<circle class=\"series{}-point\" cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"3\"><title>{}</title></circle>\n",
                          style, axes.x_of(devices), axes.y_of(value),
                          svg_escape(fmt::format("{} devices, {}: {:.4g} {}", devices, series.name, value, chart.y_label))));
    }
  }
}

// One chart of render_scaling_charts, drawn from `top`; returns the y below it.
double draw_scaling_chart(SvgWriter& svg, const ScalingChart& chart, double top) {
  svg.text(kLeft, top, chart.heading, "start", "heading");
  constexpr size_t kLegendPerRow = 4;
  const size_t legend_rows = (chart.series.size() + kLegendPerRow - 1) / kLegendPerRow;
  draw_scaling_legend(svg, chart, top + 20, kLegendPerRow);
  ScalingAxes axes;
  axes.plot_top = top + 24 + 16.0 * static_cast<double>(std::max<size_t>(legend_rows, 1));
  axes.bottom = axes.plot_top + ScalingAxes::kHeight;
  double most = 0;
  bool any = false;
  for (const ScalingSeries& series : chart.series) {
    for (const auto& [devices, value] : series.points) {
      axes.most_devices = std::max(axes.most_devices, devices);
      most = std::max(most, value);
      any = true;
    }
  }
  if (!any) {
    svg.text(kLeft, axes.plot_top + 14, "(no device counts)", "start", "label");
    return axes.plot_top + 30;
  }
  axes.y_step = nice_step(most, 6, 0);
  axes.y_max = std::max(std::ceil(most / axes.y_step) * axes.y_step, axes.y_step);
  draw_scaling_axes(svg, chart, axes);
  draw_scaling_series(svg, chart, axes);
  return axes.bottom + 60;
}

}  // namespace

std::string render_scaling_charts(const std::string& title, const std::vector<ScalingChart>& charts) {
  SvgWriter svg;
  svg.text(kLeft, 24, title, "start", "title");
  double y = 56;
  for (const ScalingChart& chart : charts) y = draw_scaling_chart(svg, chart, y);
  return svg.finish(y);
}

std::string render_scaling_svg(const std::string& title, const std::vector<ScalingPoint>& points) {
  ScalingChart chart{"Iteration time", "iteration ms", {{"data parallel", {}}, {"burst", {}}}};
  for (const ScalingPoint& point : points) {
    chart.series[0].points.emplace_back(point.devices, point.data_parallel.ms());
    chart.series[1].points.emplace_back(point.devices, point.burst.ms());
  }
  return render_scaling_charts(title, {chart});
}

}  // namespace burst::cli
