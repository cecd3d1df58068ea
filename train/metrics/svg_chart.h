// Line charts as one self-contained SVG document: panels stacked over a shared linear x axis, "nice" ticks,
// one <polyline> per series, a legend right of each panel; no scripts, no external fonts, no log scales.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace lmzoo {

struct ChartSeries {
  std::string label;       // legend text
  std::string colour;      // an SVG colour, e.g. "#1f77b4"
  std::string css_class;   // the polyline's class attribute (what the series is: "train_loss")
  std::string group;       // its data-group attribute (whose series it is: a run's name)
  bool dashed = false;
  bool dots = false;       // a dot on every point: for sparse series such as validation
  std::vector<std::pair<double, double>> points;  // (x, y) in data units, all finite, in drawing order
};

struct ChartPanel {
  std::string y_label;
  std::vector<ChartSeries> series;
};

struct Chart {
  std::string title;
  std::string x_label;
  std::vector<ChartPanel> panels;  // drawn top to bottom, all over the x range of every panel's points
};

// The chart as an SVG document. Non-finite points are skipped (callers should drop them first).
std::string render_svg(const Chart& chart);

// Text with &, <, >, " and ' replaced by XML entities.
std::string xml_escape(const std::string& text);

}  // namespace lmzoo
