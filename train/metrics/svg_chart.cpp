// SVG line charts: layout in pixels, "nice" 1-2-5 ticks, polylines, markers, legends. Text width is estimated from
// character counts (no font metrics), so the legend column is sized generously.
#include "train/metrics/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace lmzoo {

namespace {

// Pixel layout. Panel i's plot area is [kLeft, kLeft + kPlotW] x [top(i), top(i) + kPlotH].
constexpr double kLeft = 80, kPlotW = 640, kPlotH = 240, kTitleH = 44, kPanelGap = 56, kBottom = 24;
constexpr double kCharW = 7;  // an estimate of one character's width at font-size 12

struct Axis {
  double lo = 0, hi = 1, step = 0.2;  // the drawn range runs from tick to tick
};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// Covers [lo, hi] with about five 1-2-5 steps; an empty range (no finite data) becomes [0, 1].
Axis nice_axis(double lo, double hi) {
  if (!(lo <= hi)) lo = 0, hi = 1;
  if (lo == hi) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad, hi += pad;
  }
  const double raw = (hi - lo) / 5;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  const double f = raw / magnitude;
  const double step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * magnitude;
  return {std::floor(lo / step + 1e-9) * step, std::ceil(hi / step - 1e-9) * step, step};
}

std::vector<double> ticks(const Axis& a) {
  std::vector<double> out;
  for (int i = 0; a.lo + i * a.step <= a.hi + a.step * 1e-6; ++i) out.push_back(a.lo + i * a.step);
  return out;
}

// Tick text with as many decimals as the step needs: "4.5", "0.0002", "20k", "1.5M", "5.0e-05".
std::string tick_label(double v, double step) {
  if (std::abs(v) < step * 1e-6) return "0";
  char buf[32];
  const double size = std::max(std::abs(v), step);
  const double unit = size >= 1e9 ? 1e9 : size >= 1e6 ? 1e6 : size >= 1e4 ? 1e3 : 1;
  const char* suffix = unit == 1e9 ? "G" : unit == 1e6 ? "M" : unit == 1e3 ? "k" : "";
  const double scaled_step = step / unit;
  const int decimals = scaled_step >= 1 ? 0 : int(std::ceil(-std::log10(scaled_step) - 1e-9));
  if (decimals > 4) std::snprintf(buf, sizeof buf, "%.1e", v);
  else std::snprintf(buf, sizeof buf, "%.*f%s", decimals, v / unit, suffix);
  return buf;
}

// The range of the finite x (or y) values of some series; lo > hi when there are none.
std::pair<double, double> extent(const std::vector<ChartSeries>& series, bool x) {
  double lo = HUGE_VAL, hi = -HUGE_VAL;
  for (const auto& s : series) {
    for (const auto& [px, py] : s.points) {
      const double v = x ? px : py;
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
  }
  return {lo, hi};
}

size_t legend_chars(const Chart& chart) {
  size_t chars = 0;
  for (const auto& p : chart.panels)
    for (const auto& s : p.series) chars = std::max(chars, s.label.size());
  return chars;
}

std::string marker_id(size_t panel, size_t series) {
  return "dot-" + std::to_string(panel) + "-" + std::to_string(series);
}

// One dot marker per dotted series, in that series' colour.
void write_markers(std::ostream& out, const Chart& chart) {
  out << "<defs>\n";
  for (size_t p = 0; p < chart.panels.size(); ++p) {
    for (size_t s = 0; s < chart.panels[p].series.size(); ++s) {
      const ChartSeries& series = chart.panels[p].series[s];
      if (!series.dots) continue;
      out << "<marker id=\"" << marker_id(p, s) << "\" viewBox=\"0 0 8 8\" refX=\"4\" refY=\"4\" markerWidth=\"8\" "
          << "markerHeight=\"8\" markerUnits=\"userSpaceOnUse\"><circle cx=\"4\" cy=\"4\" r=\"3\" fill=\""
          << xml_escape(series.colour) << "\"/></marker>\n";
    }
  }
  out << "</defs>\n";
}

// Stroke, dash and marker attributes shared by a series' polyline and its legend swatch.
std::string stroke_style(const ChartSeries& s, const std::string& marker) {
  std::string style = " fill=\"none\" stroke=\"" + xml_escape(s.colour) + "\" stroke-width=\"1.6\"";
  if (s.dashed) style += " stroke-dasharray=\"6 4\"";
  if (s.dots) {
    for (const char* where : {"start", "mid", "end"}) {
      style += std::string(" marker-") + where + "=\"url(#" + marker + ")\"";
    }
  }
  return style;
}

// Grid lines, tick labels and the y label of one panel whose plot area starts at pixel row TOP.
void write_axes(std::ostream& out, const Axis& x, const Axis& y, double top, const std::string& y_label) {
  out << "<g class=\"axes\" stroke=\"#ddd\" stroke-width=\"1\">\n";
  for (double v : ticks(x)) {
    const double px = kLeft + (v - x.lo) / (x.hi - x.lo) * kPlotW;
    out << "<line x1=\"" << num(px) << "\" y1=\"" << num(top) << "\" x2=\"" << num(px) << "\" y2=\""
        << num(top + kPlotH) << "\"/>\n";
    out << "<text x=\"" << num(px) << "\" y=\"" << num(top + kPlotH + 16) << "\" stroke=\"none\" fill=\"#333\" "
        << "text-anchor=\"middle\">" << tick_label(v, x.step) << "</text>\n";
  }
  for (double v : ticks(y)) {
    const double py = top + kPlotH - (v - y.lo) / (y.hi - y.lo) * kPlotH;
    out << "<line x1=\"" << num(kLeft) << "\" y1=\"" << num(py) << "\" x2=\"" << num(kLeft + kPlotW) << "\" y2=\""
        << num(py) << "\"/>\n";
    out << "<text x=\"" << num(kLeft - 6) << "\" y=\"" << num(py + 4) << "\" stroke=\"none\" fill=\"#333\" "
        << "text-anchor=\"end\">" << tick_label(v, y.step) << "</text>\n";
  }
  out << "</g>\n<rect x=\"" << num(kLeft) << "\" y=\"" << num(top) << "\" width=\"" << num(kPlotW) << "\" height=\""
      << num(kPlotH) << "\" fill=\"none\" stroke=\"#333\"/>\n";
  const double mid = top + kPlotH / 2;
  out << "<text x=\"18\" y=\"" << num(mid) << "\" text-anchor=\"middle\" transform=\"rotate(-90 18 " << num(mid)
      << ")\">" << xml_escape(y_label) << "</text>\n";
}

// One panel: axes, one polyline per series (one "x,y" pair per finite point), and its legend column.
void write_panel(std::ostream& out, const ChartPanel& panel, size_t index, const Axis& x, double top) {
  const auto [y_lo, y_hi] = extent(panel.series, false);
  const Axis y = nice_axis(y_lo, y_hi);
  write_axes(out, x, y, top, panel.y_label);
  const double legend_x = kLeft + kPlotW + 24;
  for (size_t s = 0; s < panel.series.size(); ++s) {
    const ChartSeries& series = panel.series[s];
    const std::string style = stroke_style(series, marker_id(index, s));
    out << "<polyline class=\"" << xml_escape(series.css_class) << "\" data-group=\"" << xml_escape(series.group)
        << "\"" << style << " points=\"";
    const char* separator = "";
    for (const auto& [vx, vy] : series.points) {
      if (!std::isfinite(vx) || !std::isfinite(vy)) continue;
      out << separator << num(kLeft + (vx - x.lo) / (x.hi - x.lo) * kPlotW) << ","
          << num(top + kPlotH - (vy - y.lo) / (y.hi - y.lo) * kPlotH);
      separator = " ";
    }
    out << "\"/>\n";
    const double ly = top + 10 + 20 * double(s);
    out << "<line x1=\"" << num(legend_x) << "\" y1=\"" << num(ly) << "\" x2=\"" << num(legend_x + 30) << "\" y2=\""
        << num(ly) << "\"" << style << "/>\n<text x=\"" << num(legend_x + 38) << "\" y=\"" << num(ly + 4) << "\">"
        << xml_escape(series.label) << "</text>\n";
  }
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_svg(const Chart& chart) {
  const double width = kLeft + kPlotW + 24 + 38 + kCharW * double(legend_chars(chart)) + 16;
  const double height = kTitleH + double(chart.panels.size()) * (kPlotH + kPanelGap) + kBottom;
  std::vector<ChartSeries> all;
  for (const auto& p : chart.panels) all.insert(all.end(), p.series.begin(), p.series.end());
  const auto [x_lo, x_hi] = extent(all, true);
  const Axis x = nice_axis(x_lo, x_hi);  // shared by every panel, so their x positions line up

  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\""
      << num(width) << "\" height=\"" << num(height) << "\" viewBox=\"0 0 " << num(width) << " " << num(height)
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  write_markers(out, chart);
  out << "<text x=\"" << num(width / 2) << "\" y=\"26\" text-anchor=\"middle\" font-size=\"16\">"
      << xml_escape(chart.title) << "</text>\n";
  for (size_t i = 0; i < chart.panels.size(); ++i) {
    write_panel(out, chart.panels[i], i, x, kTitleH + double(i) * (kPlotH + kPanelGap));
  }
  // The x label sits under the last panel's tick labels.
  const double last_bottom = kTitleH + double(chart.panels.size()) * (kPlotH + kPanelGap) - kPanelGap;
  out << "<text x=\"" << num(kLeft + kPlotW / 2) << "\" y=\"" << num(last_bottom + 38) << "\" text-anchor=\"middle\">"
      << xml_escape(chart.x_label) << "</text>\n</svg>\n";
  return out.str();
}

}  // namespace lmzoo
