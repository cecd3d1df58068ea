// lmzoo plot: loss and learning-rate curves of one or more runs (their metrics.jsonl) as one SVG file.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "tools/cli/cli_common.h"
#include "tools/cli/cli_error.h"
#include "tools/cli/commands.h"
#include "train/metrics/loss_curves.h"

namespace lmzoo::cli {

namespace {

// --x as a CurveAxis; the closed set is spelled out here, at the command line's edge.
CurveAxis parse_axis(const std::string& value) {
  if (value == "step") return CurveAxis::kStep;
  if (value == "tokens") return CurveAxis::kTokens;
  throw UsageError("--x must be step or tokens, got '" + value + "'");
}

// cxxopts reads "--x" as a malformed short option (long names need two characters): spell it --x-axis.
std::vector<std::string> spell_x_long(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (auto& arg : args) {
    if (arg == "--x" || arg.rfind("--x=", 0) == 0) arg.replace(0, 3, "--x-axis");
  }
  return args;
}

}  // namespace

int run_plot(int argc_in, char** argv_in) {
  std::vector<std::string> arg_strings = spell_x_long(argc_in, argv_in);
  std::vector<char*> args;
  for (auto& a : arg_strings) args.push_back(a.data());
  const int argc = int(args.size());
  char** argv = args.data();
  cxxopts::Options options("lmzoo plot",
                           "Draw training loss, validation loss and learning rate of runs (RUN_DIR/metrics.jsonl) "
                           "as one SVG, runs overlaid.");
  options.custom_help("RUN_DIR [RUN_DIR...] --out curves.svg [--x step|tokens]").positional_help("");
  options.add_options()
      ("run", "run directories (positional; several are overlaid)", cxxopts::value<std::vector<std::string>>())
      ("out", "SVG file to write, e.g. curves.svg", cxxopts::value<std::string>())
      ("x-axis", "x axis: step or tokens (tokens seen); --x for short",
       cxxopts::value<std::string>()->default_value("step"));
  cxxopts::ParseResult r;
  if (parse_or_help(options, argc, argv, r, "run")) return 0;
  if (!r.count("run")) throw UsageError("name at least one run directory, e.g. lmzoo plot runs/a --out curves.svg");
  require_option(r, "out");
  const CurveAxis axis = parse_axis(r["x-axis"].as<std::string>());
  const auto dirs = r["run"].as<std::vector<std::string>>();
  const std::string out = r["out"].as<std::string>();
  write_loss_curves(std::vector<std::filesystem::path>(dirs.begin(), dirs.end()), out, axis);
  std::cout << "plotted " << dirs.size() << (dirs.size() == 1 ? " run" : " runs") << " -> " << out << std::endl;
  return 0;
}

}  // namespace lmzoo::cli
