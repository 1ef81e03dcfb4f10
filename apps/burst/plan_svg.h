#pragma once
// Pictures of plans for a browser: plain SVG 1.1 (no scripts, no external resources), every
// piece of text escaped. `burst plan --svg FILE` writes them.
#include <string>
#include <utility>
#include <vector>

#include "burst/graph/graph.h"
#include "burst/timing/evaluate.h"
#include "burst/plan/plan.h"
#include "burst/util/units.h"

namespace burst::cli {

using plan::Plan;
using plan::LayerPlacement;
using timing::Activity;
using timing::ActivityKind;
using timing::PlanEvaluation;

// At most this many rows in a timeline picture; more ranks are aggregated (timeline_rows).
inline constexpr int kMaxTimelineRows = 64;

// Two charts of one plan:
//  (a) devices per layer: a bar per layer, x = layer id, y = the layer's device count;
//  (b) one iteration per rank (a Gantt chart, time in ms): each row holds a compute lane
//      (forward, backward) and two communication lanes (input transfers, weight-gradient
//      all-reduces), which run beside compute; idle time is the row's background. Ranks
//      with identical timelines share a row, and at most kMaxTimelineRows rows are drawn
//      (see timeline_rows); the caption says which ranks each row stands for.
// `evaluation` must come from evaluate_plan on `plan` and `graph` with timelines filled
// (EvaluateOptions::timelines); without them the Gantt chart shows every rank idle.
std::string render_plan_svg(const Plan& plan, const PlanEvaluation& evaluation,
                            const graph::Graph& graph);

// One row of the Gantt chart: ranks first_rank..last_rank, drawn with shown_rank's timeline.
// `identical` says every rank of the row has exactly that timeline; otherwise the row is a
// group of consecutive ranks squeezed into one row and shown_rank is its first rank.
struct TimelineRow {
  int first_rank = 0;
  int last_rank = 0;
  int shown_rank = 0;
  bool identical = true;
};

// Rows for `timelines` (one per rank): consecutive ranks with identical timelines share a
// row; when that still leaves more than max_rows (>= 1) rows, consecutive rows are merged
// evenly into at most max_rows groups, each shown by its first rank. Covers every rank once,
// in order.
std::vector<TimelineRow> timeline_rows(const std::vector<std::vector<Activity>>& timelines,
                                       int max_rows = kMaxTimelineRows);

// One device count of a strong-scaling sweep: the predicted iteration time of each strategy.
struct ScalingPoint {
  int devices = 0;
  Seconds data_parallel;
  Seconds burst;
};

// The strong-scaling curve: iteration time (ms) against devices (log2 axis), one line per
// strategy, points marked. `title` heads the picture (escaped here). Points in ascending
// device order; an empty list gives a picture that says so.
std::string render_scaling_svg(const std::string& title, const std::vector<ScalingPoint>& points);

// A line per strategy in a chart of some quantity against device count.
struct ScalingSeries {
  std::string name;                          // legend text
  std::vector<std::pair<int, double>> points;  // (devices, value), ascending devices
};
struct ScalingChart {
  std::string heading;
  std::string y_label;  // the quantity and its unit
  std::vector<ScalingSeries> series;  // up to 8 colours, then they repeat
};

// Charts stacked one above the other under `title` (escaped here), each with a log2 device
// axis and its points marked (with tooltips). A chart without points says so.
std::string render_scaling_charts(const std::string& title, const std::vector<ScalingChart>& charts);

// `text` escaped for SVG text and attribute values (& < > " '); control characters, which
// XML forbids, become '?'.
std::string svg_escape(const std::string& text);

}  // namespace burst::cli
