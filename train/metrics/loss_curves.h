// Loss curves of training runs from their metrics.jsonl as one SVG: training and validation loss on top, learning
// rate below, runs overlaid in distinct colours. Reads what train/trainer.cpp writes; draws no other metric.
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace lmzoo {

// What the curves are drawn against: the optimizer step, or the training tokens seen ("tokens_seen").
enum class CurveAxis { kStep, kTokens };

// One run's series as (x, y) points in file order, one per record that carries a finite value: "train" records
// give loss and lr, "eval" records val_loss. Eval records hold no tokens_seen: their token count is interpolated
// from the train records around their step (extrapolated at the rate of the nearest one).
struct RunCurves {
  std::string name;  // legend name: the run directory's name
  std::vector<std::pair<double, double>> train_loss, val_loss, lr;
};

// Reads RUN_DIR/metrics.jsonl. Lines that do not parse (a line torn by a crash) are skipped; bare NaN / Infinity
// (as Python writes them) read as missing values. Throws std::runtime_error, one line naming the path, when the
// directory or file is missing or unreadable or holds no train or eval record.
RunCurves read_run_curves(const std::filesystem::path& run_dir, CurveAxis x);

// The runs as an SVG document titled TITLE (top panel: train loss solid, val loss dashed with dots; bottom: lr).
std::string render_loss_curves(const std::vector<RunCurves>& runs, CurveAxis x, const std::string& title);

// Reads every run and writes their curves to OUT_SVG atomically (a temporary file beside it, then renamed over it).
// Throws std::runtime_error with one line naming the path and the cause; OUT_SVG is then left as it was.
void write_loss_curves(const std::vector<std::filesystem::path>& run_dirs, const std::filesystem::path& out_svg,
                       CurveAxis x = CurveAxis::kStep);

// write_loss_curves of RUN_DIR alone against step, to RUN_DIR/curves.svg (the trainer's call at each eval).
void write_run_curves(const std::filesystem::path& run_dir);

}  // namespace lmzoo
