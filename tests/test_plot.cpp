// Loss-curve plots: hand-written metrics.jsonl (NaN losses, a torn line) -> SVG that parses as XML with one
// polyline per series and one point per finite record; atomic writes and one-line errors; the lmzoo plot command;
// the trainer's curves.svg.
#include "tests/catch_compat.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "tests/cli_checks.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"
#include "train/metrics/loss_curves.h"

using namespace lmzoo;
using namespace lmzoo::test;
namespace fs = std::filesystem;

namespace {

// 5 train records (step 30 with Python's bare NaN, step 40 with the trainer's null), 3 eval records (step 55 past
// the last train record), a line torn by a crash: train loss 3 points, lr 5, val loss 3.
const char* kAlphaMetrics =
    R"({"type":"train","step":10,"loss":7.5,"lr":0.0001,"tokens_seen":2560})" "\n"
    R"({"type":"train","step":20,"loss":6.9,"lr":0.0002,"tokens_seen":5120})" "\n"
    R"({"type":"eval","step":20,"val_loss":6.8,"val_ppl":897.8})" "\n"
    R"({"type":"train","step":30,"loss":NaN,"lr":0.0003,"tokens_seen":7680})" "\n"
    R"({"type":"train","step":40,"loss":null,"lr":0.0003,"tokens_seen":10240})" "\n"
    R"({"type":"train","step":50,"loss":5.2,"lr":0.00025,"tokens_seen":12800})" "\n"
    R"({"type":"eval","step":50,"val_loss":5.4,"val_ppl":221.4})" "\n"
    R"({"type":"eval","step":55,"val_loss":5.3})" "\n"
    R"({"type":"train","st)";
// 3 train records, 1 eval record.
const char* kBetaMetrics =
    R"({"type":"train","step":10,"loss":8.0,"lr":0.001,"tokens_seen":5120})" "\n"
    R"({"type":"train","step":20,"loss":7.0,"lr":0.001,"tokens_seen":10240})" "\n"
    R"({"type":"eval","step":20,"val_loss":7.1,"val_ppl":1211.9})" "\n"
    R"({"type":"train","step":30,"loss":6.0,"lr":0.0005,"tokens_seen":15360})" "\n";

// "group class" -> the number of "x,y" pairs in that polyline's points (a repeated key counts as -1).
std::map<std::string, int> polylines(const std::string& svg) {
  auto attribute = [](const std::string& element, const std::string& name) {
    const auto start = element.find(" " + name + "=\"") + name.size() + 3;
    return element.substr(start, element.find('"', start) - start);
  };
  std::map<std::string, int> found;
  for (auto at = svg.find("<polyline "); at != std::string::npos; at = svg.find("<polyline ", at + 1)) {
    const std::string element = svg.substr(at, svg.find("/>", at) - at);
    std::istringstream points(attribute(element, "points"));
    int pairs = 0;
    for (std::string pair; points >> pair;) pairs += std::count(pair.begin(), pair.end(), ',') == 1;
    const std::string key = attribute(element, "data-group") + " " + attribute(element, "class");
    found[key] = found.count(key) ? -1 : pairs;
  }
  return found;
}

const std::map<std::string, int> kBothRuns = {{"alpha train_loss", 3}, {"alpha val_loss", 3}, {"alpha lr", 5},
                                              {"beta train_loss", 3},  {"beta val_loss", 1},  {"beta lr", 3}};

// Two run directories, alpha and beta, holding the metrics above.
struct TwoRuns {
  TempDir dir;
  fs::path alpha = dir.path / "alpha", beta = dir.path / "beta";
  TwoRuns() {
    fs::create_directories(alpha);
    fs::create_directories(beta);
    write_text(alpha / "metrics.jsonl", kAlphaMetrics);
    write_text(beta / "metrics.jsonl", kBetaMetrics);
  }
};

// Parses SVG with Python's XML parser; the same "group class" -> pairs map, every coordinate a finite number.
std::map<std::string, int> python_polylines(const TempDir& dir, const std::string& svg) {
  write_text(dir / "check.py",
             "import math, sys, xml.etree.ElementTree as ET\n"
             "root = ET.parse(sys.argv[1]).getroot()\n"
             "assert root.tag == '{http://www.w3.org/2000/svg}svg', root.tag\n"
             "for p in root.iter('{http://www.w3.org/2000/svg}polyline'):\n"
             "    pairs = [q.split(',') for q in p.get('points').split()]\n"
             "    assert all(len(q) == 2 and all(math.isfinite(float(v)) for v in q) for q in pairs)\n"
             "    print(p.get('data-group') + ' ' + p.get('class') + '\\t' + str(len(pairs)))\n");
  const std::string cmd = "/usr/bin/python3 " + (dir / "check.py") + " " + svg + " > " + (dir / "parsed");
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::map<std::string, int> found;
  std::istringstream lines(read_text(dir / "parsed"));
  for (std::string line; std::getline(lines, line);) {
    found[line.substr(0, line.find('\t'))] = std::stoi(line.substr(line.find('\t') + 1));
  }
  return found;
}

}  // namespace

TEST_CASE("two runs plot as six polylines, one point per finite record, in well-formed XML", "[plot]") {
  TwoRuns runs;
  const fs::path out = runs.dir.path / "curves.svg";
  write_loss_curves({runs.alpha, runs.beta}, out);
  const std::string svg = read_text(out);
  CHECK(polylines(svg) == kBothRuns);
  CHECK(svg.find("alpha: train loss") != std::string::npos);  // the legend names run and series
  CHECK(svg.find("beta: lr") != std::string::npos);
  CHECK(svg.find("nan") == std::string::npos);
  CHECK(svg.find("inf") == std::string::npos);
  if (std::system("/usr/bin/python3 -c 'import xml.etree.ElementTree' >/dev/null 2>&1") != 0) {
    WARN("skipped the XML parse: no /usr/bin/python3");
    return;
  }
  CHECK(python_polylines(runs.dir, out.string()) == kBothRuns);
}

TEST_CASE("against tokens, eval records take the tokens seen at their step", "[plot]") {
  TwoRuns runs;
  const RunCurves curves = read_run_curves(runs.alpha, CurveAxis::kTokens);
  CHECK(curves.name == "alpha");
  REQUIRE(curves.val_loss.size() == 3);
  CHECK(curves.val_loss[0].first == 5120);   // a train record at the same step
  CHECK(curves.val_loss[1].first == 12800);
  CHECK(curves.val_loss[2].first == Approx(14080));  // past the last train record: 256 tokens per step
  REQUIRE(curves.lr.size() == 5);
  CHECK(curves.lr[3].first == 10240);
  const fs::path out = runs.dir.path / "tokens.svg";
  write_loss_curves({runs.alpha, runs.beta}, out, CurveAxis::kTokens);
  const std::string svg = read_text(out);
  CHECK(polylines(svg) == kBothRuns);
  CHECK(svg.find(">tokens seen<") != std::string::npos);
}

TEST_CASE("write_run_curves writes curves.svg into the run directory", "[plot]") {
  TwoRuns runs;
  write_run_curves(runs.beta);
  const std::map<std::string, int> beta = {{"beta train_loss", 3}, {"beta val_loss", 1}, {"beta lr", 3}};
  CHECK(polylines(read_text(runs.beta / "curves.svg")) == beta);
}

TEST_CASE("train writes curves.svg beside metrics.jsonl at every eval", "[plot][train]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  const std::string run = dir / "run";
  const CliResult r = run_cli("train --data " + f.data_dir + " --out " + run +
                              " --n-layer 1 --n-head 2 --d-model 16 --seq-len 16 --batch-size 4 --eval-iters 1"
                              " --device cpu --steps 6 --eval-interval 3 --log-interval 1");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // 6 train records (loss and lr), 2 evals (steps 3 and 6), the run named after its directory.
  const std::map<std::string, int> expected = {{"run train_loss", 6}, {"run val_loss", 2}, {"run lr", 6}};
  CHECK(polylines(read_text(fs::path(run) / "curves.svg")) == expected);
}

TEST_CASE("missing or empty metrics and unwritable output throw one line naming the path", "[plot]") {
  TwoRuns runs;
  const fs::path out = runs.dir.path / "curves.svg";
  CHECK_THROWS_WITH(write_loss_curves({runs.dir.path / "nope"}, out), Catch::Contains("nope does not exist"));
  fs::create_directories(runs.dir.path / "empty");
  CHECK_THROWS_WITH(write_loss_curves({runs.dir.path / "empty"}, out), Catch::Contains("empty/metrics.jsonl"));
  write_text(runs.dir.path / "empty" / "metrics.jsonl", "\n{\"type\":\"other\",\"step\":1}\n");
  CHECK_THROWS_WITH(write_loss_curves({runs.dir.path / "empty"}, out), Catch::Contains("no train or eval records"));
  CHECK_FALSE(fs::exists(out));
  // OUT is a directory: the rename fails, the message names OUT, and no temporary file is left beside it.
  fs::create_directories(out);
  CHECK_THROWS_WITH(write_loss_curves({runs.alpha}, out), Catch::Contains("cannot write " + out.string() + ": "));
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(runs.dir.path)) entries += !entry.path().empty();
  CHECK(entries == 4);  // alpha, beta, empty, curves.svg/
}

TEST_CASE("CLI: lmzoo plot overlays runs; bad input is one stderr line", "[plot][cli]") {
  TwoRuns runs;
  const std::string out = runs.dir / "curves.svg";
  const CliResult r = run_cli("plot " + runs.alpha.string() + " " + runs.beta.string() + " --out " + out);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "plotted 2 runs -> " + out + "\n");
  CHECK(polylines(read_text(out)) == kBothRuns);
  CHECK(run_cli("plot " + runs.alpha.string() + " --x tokens --out " + out).exit_code == 0);
  CHECK(run_cli("plot " + runs.alpha.string() + " --x=tokens --out " + out).exit_code == 0);
  CHECK(read_text(out).find(">tokens seen<") != std::string::npos);

  const CliResult missing = run_cli("plot " + (runs.dir / "nope") + " --out " + out);
  CHECK(missing.exit_code == 1);
  check_user_error(missing, runs.dir / "nope");
  const CliResult bad_axis = run_cli("plot " + runs.alpha.string() + " --x time --out " + out);
  CHECK(bad_axis.exit_code == 2);
  check_user_error(bad_axis, "--x must be step or tokens, got 'time'");
  CHECK(run_cli("plot " + runs.alpha.string()).exit_code == 2);
  CHECK(run_cli("plot --out " + out).exit_code == 2);
  const CliResult help = run_cli("plot --help");
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("RUN_DIR [RUN_DIR...] --out curves.svg") != std::string::npos);
}
