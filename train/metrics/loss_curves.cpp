// metrics.jsonl -> RunCurves -> an SVG chart (train/metrics/svg_chart.h) -> a file renamed into place. Draws loss and lr
// only; other fields of the records (tokens_per_s, mfu, memory) are ignored.
#include "train/metrics/loss_curves.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "base/durable_io.h"
#include "train/metrics/svg_chart.h"

namespace lmzoo {

namespace {

namespace fs = std::filesystem;
using Points = std::vector<std::pair<double, double>>;

// Ten distinct colours (matplotlib's "tab10"), reused in order past ten runs.
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// LINE with the bare words NaN, Infinity and -Infinity outside strings replaced by null (JSON has no such numbers;
// Python's json module writes them).
std::string non_finite_to_null(const std::string& line) {
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < line.size()) out += line[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    in_string = c == '"';
    size_t word = 0;
    for (const char* w : {"-Infinity", "Infinity", "NaN"}) {
      if (!word && line.compare(i, std::strlen(w), w) == 0) word = std::strlen(w);
    }
    if (word) out += "null", i += word - 1;
    else out += c;
  }
  return out;
}

// The record on LINE, or null when it is not a JSON object.
nlohmann::json parse_record(const std::string& line) {
  auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (record.is_discarded()) record = nlohmann::json::parse(non_finite_to_null(line), nullptr, false);
  return record.is_object() ? record : nlohmann::json();
}

// RECORD[KEY] as a double; NaN when absent or not a number (the trainer writes a NaN loss as null).
double number(const nlohmann::json& record, const char* key) {
  const auto it = record.find(key);
  return it != record.end() && it->is_number() ? it->get<double>() : NAN;
}

// RECORD's "type" ("train", "eval", ...), or "" when it has none.
std::string type_of(const nlohmann::json& record) {
  const auto it = record.find("type");
  return it != record.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string run_name(const fs::path& run_dir) {
  fs::path path = fs::absolute(run_dir).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();  // "runs/a/" -> "runs/a"
  return path.filename().empty() ? run_dir.string() : path.filename().string();
}

// Tokens seen at STEP from KNOWN (step, tokens_seen) pairs sorted by step: exact, interpolated between the two
// around it, or at the tokens-per-step rate of the nearest one outside them; NaN when nothing is known.
double tokens_at(const Points& known, double step) {
  const auto after = std::lower_bound(known.begin(), known.end(), std::make_pair(step, -HUGE_VAL));
  if (after != known.end() && after->first == step) return after->second;
  if (after != known.begin() && after != known.end()) {
    const auto before = after - 1;
    return before->second + (after->second - before->second) * (step - before->first) / (after->first - before->first);
  }
  if (known.empty()) return NAN;
  const auto& nearest = after == known.end() ? known.back() : known.front();
  return nearest.first > 0 ? nearest.second / nearest.first * step : NAN;
}

// The three series of RECORDS (each a train or eval object with a numeric step), against AXIS.
RunCurves curves_of(const std::vector<nlohmann::json>& records, CurveAxis axis, const std::string& name) {
  Points known;  // (step, tokens_seen) of the train records
  for (const auto& r : records) {
    if (type_of(r) == "train" && std::isfinite(number(r, "tokens_seen"))) {
      known.emplace_back(number(r, "step"), number(r, "tokens_seen"));
    }
  }
  std::sort(known.begin(), known.end());
  RunCurves curves{name, {}, {}, {}};
  for (const auto& r : records) {
    const double step = number(r, "step"), tokens = number(r, "tokens_seen");
    const double x = axis == CurveAxis::kStep ? step : std::isfinite(tokens) ? tokens : tokens_at(known, step);
    auto add = [&](Points& series, const char* key) {
      const double y = number(r, key);
      if (std::isfinite(x) && std::isfinite(y)) series.emplace_back(x, y);  // a NaN loss is a gap, not a point
    };
    if (type_of(r) == "train") add(curves.train_loss, "loss"), add(curves.lr, "lr");
    else add(curves.val_loss, "val_loss");
  }
  return curves;
}

}  // namespace

RunCurves read_run_curves(const fs::path& run_dir, CurveAxis x) {
  const fs::path file = run_dir / "metrics.jsonl";
  std::error_code ec;
  if (!fs::exists(run_dir, ec)) throw std::runtime_error("run directory " + run_dir.string() + " does not exist");
  if (!fs::is_directory(run_dir, ec)) throw std::runtime_error(run_dir.string() + " is not a run directory");
  if (!fs::exists(file, ec)) {
    throw std::runtime_error("cannot read " + file.string() + ": no such file (not a training run directory?)");
  }
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string() + ": " + std::strerror(errno));
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json r = parse_record(line);
    const bool kept = r.is_object() && (type_of(r) == "train" || type_of(r) == "eval");
    if (kept && std::isfinite(number(r, "step"))) records.push_back(std::move(r));
  }
  if (in.bad()) throw std::runtime_error("cannot read " + file.string() + ": " + std::strerror(errno ? errno : EIO));
  if (records.empty()) throw std::runtime_error(file.string() + " holds no train or eval records to plot");
  return curves_of(records, x, run_name(run_dir));
}

std::string render_loss_curves(const std::vector<RunCurves>& runs, CurveAxis x, const std::string& title) {
  Chart chart{title, x == CurveAxis::kStep ? "step" : "tokens seen", {{"loss", {}}, {"learning rate", {}}}};
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunCurves& run = runs[i];
    const std::string colour = kPalette[i % std::size(kPalette)];
    // Fields: label, colour, class, group, dashed, dots, points.
    chart.panels[0].series.push_back({run.name + ": train loss", colour, "train_loss", run.name, false, false,
                                      run.train_loss});
    chart.panels[0].series.push_back({run.name + ": val loss", colour, "val_loss", run.name, true, true, run.val_loss});
    chart.panels[1].series.push_back({run.name + ": lr", colour, "lr", run.name, false, false, run.lr});
  }
  return render_svg(chart);
}

void write_loss_curves(const std::vector<fs::path>& run_dirs, const fs::path& out_svg, CurveAxis x) {
  if (run_dirs.empty()) throw std::runtime_error("cannot write " + out_svg.string() + ": no run directories given");
  std::vector<RunCurves> runs;
  for (const auto& dir : run_dirs) runs.push_back(read_run_curves(dir, x));
  // Runs whose directories share a name (a/run, b/run) are named by their paths as given instead.
  std::vector<bool> shared(runs.size(), false);
  for (size_t i = 0; i < runs.size(); ++i)
    for (size_t j = 0; j < runs.size(); ++j) shared[i] = shared[i] || (i != j && runs[i].name == runs[j].name);
  std::string names;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (shared[i]) runs[i].name = run_dirs[i].string();
    names += (i ? ", " : "") + runs[i].name;
  }
  const std::string title = runs.size() <= 3 ? "Training curves: " + names
                                             : "Training curves: " + std::to_string(runs.size()) + " runs";
  replace_file_durably(out_svg.string(), render_loss_curves(runs, x, title));
}

void write_run_curves(const fs::path& run_dir) { write_loss_curves({run_dir}, run_dir / "curves.svg"); }

}  // namespace lmzoo
