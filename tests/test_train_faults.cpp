// Training faults: non-finite steps stop the run without saving, one live run per directory (flock), honest
// resume (conflicting flags refused, a fixed decay horizon, metrics cut back, any working directory), and
// kill -9 at random points followed by --resume ends with the weights of an uninterrupted run.
#include "tests/catch_compat.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "tests/checkpoint_compare.h"
#include "tests/cli_checks.h"
#include "tests/cli_helpers.h"
#include "tests/file_trees.h"
#include "tests/fixtures.h"
#include "tests/rank_launch.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/checkpoint_swap.h"
#include "train/schedule.h"
#include "train/train_config.h"

extern char** environ;

using namespace lmzoo;
using namespace lmzoo::test;
namespace fs = std::filesystem;

namespace {

const std::string kTiny =
    " --n-layer 1 --n-head 2 --d-model 16 --seq-len 16 --batch-size 4 --eval-iters 1 --log-interval 1 --device cpu ";

// Starts `lmzoo ARGS` (ARGS already quoted) in the background, output to dir's bg.out and bg.err; returns its pid.
pid_t spawn_cli(const std::string& args, const TempDir& dir) {
  return spawn_shell(std::string(LMZOO_BINARY) + " " + args, dir / "bg.out", dir / "bg.err");
}

std::vector<nlohmann::json> metrics_records(const std::string& run_dir) {
  std::vector<nlohmann::json> records;
  std::istringstream lines(read_text(run_dir + "/metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) records.push_back(nlohmann::json::parse(line));
  return records;
}


std::string train_ok(const std::string& args) {
  const CliResult r = run_cli("train " + args);
  INFO("lmzoo train " << args << "\n" << r.err);
  REQUIRE(r.exit_code == 0);
  return r.out;
}

}  // namespace

TEST_CASE("schedule: the decay ends at decay_steps and min_lr holds after it", "[train][schedule]") {
  TrainConfig c;
  c.lr = 1e-3;
  c.min_lr = 1e-4;
  c.warmup = 10;
  c.steps = 500;  // training goes on past the horizon
  c.decay_steps = 110;
  CHECK(learning_rate(c, 60) == Approx(1e-4 + 0.5 * 9e-4));  // half way to the horizon: cos(pi/2) = 0
  CHECK(learning_rate(c, 110) == Approx(1e-4));
  CHECK(learning_rate(c, 400) == Approx(1e-4));
  c.decay_steps = 0;  // 0: the horizon is steps
  CHECK(learning_rate(c, 255) == Approx(1e-4 + 0.5 * 9e-4));
}

// A run in dir/run trained to step 2 (last/ and best/ at step 2).
static std::string two_step_run(const TempDir& dir) {
  const std::string run = dir / "run";
  train_ok("--data " + tiny_corpus("char").data_dir + " --out " + run + kTiny + "--steps 2 --eval-interval 2");
  return run;
}

TEST_CASE("non-finite gradients: steps are skipped, the run stops after K in a row, nothing is saved",
          "[train][faults][nonfinite]") {
  TempDir dir;
  const std::string run = two_step_run(dir);
  // Plant a NaN in one weight of last/: every later gradient is NaN.
  const CheckpointInfo info = read_checkpoint(run + "/last");
  AnyModel model = load_model(info, torch::kCPU);
  {
    torch::NoGradGuard no_grad;
    model.module()->parameters()[0].view(-1)[0] = NAN;
  }
  torch::save(model.module(), run + "/last/model.pt");
  const std::string before = read_text(run + "/last/model.pt") + read_text(run + "/last/trainer_state.json");

  // No eval before step 100: the third skip in a row, at step 5, ends the run.
  const CliResult r = run_cli("train --resume " + run + " --steps 20 --max-consecutive-skips 3 --eval-interval 100");
  INFO(r.err);
  CHECK(r.exit_code == 1);
  // Progress lines, then one error line, the last.
  const std::string last_line = r.err.substr(r.err.rfind('\n', r.err.size() - 2) + 1);
  CHECK(last_line.rfind("lmzoo train: error: stopped at step 5: the gradients were not finite", 0) == 0);
  CHECK(last_line.find("in 3 steps in a row") != std::string::npos);
  CHECK(last_line.find("--lr") != std::string::npos);
  CHECK(r.err.find("error") == r.err.rfind("error"));
  CHECK(r.err.find("frame #") == std::string::npos);
  CHECK(read_text(run + "/last/model.pt") + read_text(run + "/last/trainer_state.json") == before);
  // The skipped steps were logged and counted.
  const auto records = metrics_records(run);
  REQUIRE(!records.empty());
  CHECK(records.back()["step"] == 5);
  CHECK(records.back()["skipped_steps"] == 3);

  // With an eval at step 4 (before 25 skips in a row), the save is refused: the weights are not finite.
  const CliResult saving = run_cli("train --resume " + run + " --steps 20");
  CHECK(saving.exit_code == 1);
  CHECK(saving.err.find("error: the weights are not finite at step 4: not saved") != std::string::npos);
  CHECK(read_text(run + "/last/model.pt") + read_text(run + "/last/trainer_state.json") == before);

  // A healthy run counts none.
  const std::string healthy = dir / "healthy";
  train_ok("--data " + tiny_corpus("char").data_dir + " --out " + healthy + kTiny + "--steps 3 --eval-interval 3");
  for (const auto& record : metrics_records(healthy)) {
    if (record["type"] == "train") CHECK(record["skipped_steps"] == 0);
  }
}

TEST_CASE("a new run never starts in a directory holding run state, whatever part of it is missing",
          "[train][faults][run_dir]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  const std::string run = two_step_run(dir);
  const std::string fresh = "train --data " + f.data_dir + " --out " + run + kTiny + "--steps 2";
  fs::remove_all(run + "/last");  // a run stopped before its first last/, or whose last/ was removed
  struct Case {
    std::vector<std::string> removed;  // besides last/
    std::string named;                 // what the refusal lists
  };
  for (const Case& c : {Case{{}, "(best, curves.svg, metrics.jsonl)"}, Case{{"best"}, "(curves.svg, metrics.jsonl)"},
                        Case{{"best", "curves.svg"}, "(metrics.jsonl)"}, Case{{"metrics.jsonl"}, "(best, curves.svg)"}}) {
    TempDir copy;
    const std::string case_run = copy / "run";
    fs::copy(run, case_run, fs::copy_options::recursive);
    for (const auto& name : c.removed) fs::remove_all(case_run + "/" + name);
    const auto before = tree_bytes(case_run);
    const CliResult r = run_cli("train --data " + f.data_dir + " --out " + case_run + kTiny + "--steps 2");
    INFO("removed last/ and " << c.removed.size() << " more");
    check_user_error(r, case_run + " already holds a run " + c.named + "; it has no complete last/ to resume from");
    CHECK(r.exit_code == 2);
    CHECK(tree_bytes(case_run) == before);  // nothing replaced, nothing added
  }
  // A lock file and an empty metrics.jsonl (a run killed before it logged anything) are no run state.
  for (const auto& e : fs::directory_iterator(run)) {
    if (e.path().filename() != ".lock") fs::remove_all(e.path());
  }
  write_text(run + "/metrics.jsonl", "");
  CHECK(last_json_line(train_ok(fresh.substr(std::string("train ").size())))["step"] == 2);
}

TEST_CASE("one live run per run directory: a second is refused, the lock dies with its process",
          "[train][faults][lock]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  const std::string run = two_step_run(dir);
  const pid_t first = spawn_cli("train --resume " + run + " --steps 100000 --eval-interval 100000", dir);
  // The first run holds the lock once its progress lines start.
  for (int i = 0; i < 400 && read_text(dir / "bg.err").find("step 3") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  REQUIRE(read_text(dir / "bg.err").find("step 3") != std::string::npos);
  const CliResult second = run_cli("train --resume " + run + " --steps 100000");
  check_user_error(second, "is in use by another lmzoo train (process " + std::to_string(first) + ")");
  CHECK(second.exit_code == 1);
  const CliResult fresh = run_cli("train --data " + f.data_dir + " --out " + run + kTiny + "--steps 4");
  CHECK(fresh.exit_code != 0);  // a fresh run on it is refused too (it already holds a run)

  kill(first, SIGKILL);
  CHECK(wait_exit_code(first) == -SIGKILL);
  const std::string out = train_ok("--resume " + run + " --steps 4");  // the kernel released the lock
  CHECK(last_json_line(out)["step"] == 4);
}

TEST_CASE("resume refuses flags that contradict the run and keeps the decay horizon",
          "[train][faults][resume]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  const std::string run = dir / "run";
  train_ok("--data " + f.data_dir + " --out " + run + kTiny + "--steps 6 --eval-interval 6 --warmup 2 --lr 1e-3 "
           "--min-lr 1e-4");
  const CliResult conflicting =
      run_cli("train --resume " + run + " --steps 8 --n-layer 2 --seq-len 32 --batch-size 8 --objective mlm --data " + f.dir);
  check_user_error(conflicting, "flags contradict the run");
  CHECK(conflicting.exit_code == 2);
  for (const std::string& expected : std::vector<std::string>{"--n-layer 2 (the run's: 1)", "--seq-len 32 (the run's: 16)", "--batch-size 8 (the run's: 4)",
                                                           "--objective mlm (the run's: causal)", "--data " + f.dir}) {
    INFO(expected);
    CHECK(conflicting.err.find(expected) != std::string::npos);
  }
  // What may change instead: every resumable setting by its flag (train/train_fields.h), and nothing else.
  const std::string may_change = conflicting.err.substr(conflicting.err.find("on resume only"));
#define LMZOO_CHECK_RESUMABLE_FLAG(type, name, default_value, flag, flag_kind, group, resumable, help) \
  if (*flag) CHECK((may_change.find(std::string("--") + flag + ",") != std::string::npos) == resumable);
  LMZOO_TRAIN_CONFIG_FIELDS(LMZOO_CHECK_RESUMABLE_FLAG)
#undef LMZOO_CHECK_RESUMABLE_FLAG
  CHECK(may_change.find("--lr, ") != std::string::npos);
  CHECK(may_change.find("--batch-size") == std::string::npos);
  CHECK(read_checkpoint(run + "/last").state.step == 6);

  // The same values as the run's are no conflict; --steps extends the run.
  const std::string out = train_ok("--resume " + run + " --steps 10 --n-layer 1 --batch-size 4 --eval-interval 10");
  CHECK(last_json_line(out)["step"] == 10);
  const auto records = metrics_records(run);
  std::vector<int64_t> steps;
  for (const auto& record : records) {
    if (record["type"] != "train") continue;
    steps.push_back(record["step"]);
    // The decay horizon stays at the 6 steps the run started with: min_lr from there on, no jump (a record
    // of step s logs the rate step s - 1 ran with).
    if (record["step"].get<int64_t>() > 6) CHECK(record["lr"].get<double>() == Approx(1e-4));
  }
  CHECK(steps == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(read_checkpoint(run + "/last").train.decay_steps == 6);
}

TEST_CASE("a run started with relative paths resumes from any working directory", "[train][faults][resume]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  fs::create_directories(dir / "work");
  fs::create_directories(dir / "elsewhere");
  fs::copy(f.data_dir, dir / "work/data", fs::copy_options::recursive);
  const std::string start = "cd " + (dir / "work") + " && " + LMZOO_BINARY + " train --data data --out run" + kTiny +
                            "--steps 2 --eval-interval 2 >/dev/null 2>&1";
  REQUIRE(std::system(start.c_str()) == 0);
  const std::string resume = "cd " + (dir / "elsewhere") + " && " + LMZOO_BINARY + " train --resume ../work/run " +
                             "--steps 4 >/dev/null 2>&1";
  CHECK(std::system(resume.c_str()) == 0);
  CHECK(read_checkpoint(dir / "work/run/last").state.step == 4);
  CHECK(read_checkpoint(dir / "work/run/last").train.data_dir == fs::weakly_canonical(dir / "work/data").string());
}

// Random kill -9 points (seeded) during a run; after each, --resume (or a fresh start when nothing was saved yet).
// The end: the weights of an uninterrupted run, bit for bit, and metrics.jsonl whose steps only go forward.
TEST_CASE("kill -9 at random points, then resume: the weights of an uninterrupted run",
          "[train][faults][kill]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  const std::string flags = kTiny + "--steps 24 --eval-interval 1 --dropout 0.1 --grad-accum 2 ";
  const std::string straight = dir / "straight";
  const auto straight_start = std::chrono::steady_clock::now();
  train_ok("--data " + f.data_dir + " --out " + straight + flags);
  // Kill points in the first third of the uninterrupted run's own duration, so that they land mid-run on a fast or
  // a slow machine alike: each killed run does at most a third of the work, so at least three kills come before a
  // resumed run can finish (however loaded the machine is, as long as it stays about as loaded as it was).
  const auto straight_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - straight_start).count();

  const std::string run = dir / "killed";
  std::mt19937 rng(2026);
  std::uniform_int_distribution<int> delay_ms(int(straight_ms / 12), int(straight_ms / 3));
  int kills = 0;
  // A kill before the first complete checkpoint leaves a run that cannot be resumed and that a new run refuses
  // to overwrite (a metrics.jsonl, a half-written .last.tmp-PID): the user removes it and starts again.
  const auto resumable = [&run] {
    if (!find_complete_checkpoint(run, "last").empty()) return true;
    fs::remove_all(run);
    return false;
  };
  for (int attempt = 0; attempt < 12 && kills < 5; ++attempt) {
    const bool started = resumable();
    const pid_t pid = spawn_cli(started ? "train --resume " + run + " --steps 24"
                                        : "train --data " + f.data_dir + " --out " + run + flags,
                                dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    kill(pid, SIGKILL);
    const int code = wait_exit_code(pid);
    if (code == -SIGKILL) ++kills;
    if (code == 0) break;  // it finished before the kill
  }
  INFO("kills: " << kills);
  CHECK(kills >= 3);
  const bool started = resumable();
  if (!started || read_checkpoint(run + "/last").state.step < 24) {
    train_ok(started ? "--resume " + run + " --steps 24" : "--data " + f.data_dir + " --out " + run + flags);
  }
  CHECK(same_weights(straight + "/last", run + "/last"));
  int64_t previous = 0;
  for (const auto& record : metrics_records(run)) {
    if (record["type"] != "train") continue;
    CHECK(record["step"].get<int64_t>() == previous + 1);
    previous = record["step"];
  }
  CHECK(previous == 24);
}

TEST_CASE("fp16 off CUDA is refused before the run directory is made", "[train][faults][fp16]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  const CliResult r = run_cli("train --data " + f.data_dir + " --out " + (dir / "run") + kTiny + "--precision fp16");
  check_user_error(r, "--precision fp16 needs a CUDA device");
  CHECK(r.exit_code == 2);
  CHECK_FALSE(fs::exists(dir / "run"));
}
