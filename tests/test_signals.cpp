// Ctrl-C (SIGINT) and SIGTERM on every long command: train saves last/ on the first and stops at once on a second
// (never a heap corruption or an abort), eval stops with exit 130 even when started with SIGINT ignored (as a
// script's background job is), generate prints what it produced, prepare removes its staged directory, and the
// next command removes what a killed one left. The sanitizer build runs these too
// (tools/sanitize_check.sh).
#include "tests/catch_compat.h"

#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <sstream>
#include <thread>

#include "tests/cli_checks.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"
#include "tests/rank_launch.h"
#include "train/checkpoint/checkpoint.h"

using namespace lmzoo;
using namespace lmzoo::test;
namespace fs = std::filesystem;

namespace {

const std::string kTiny =
    " --n-layer 1 --n-head 2 --d-model 16 --seq-len 16 --batch-size 4 --eval-iters 1 --log-interval 1 --device cpu ";

// Starts `lmzoo ARGS` as a script's background job would be: with SIGINT and SIGTERM ignored on entry.
pid_t spawn_ignoring_signals(const std::string& args, const TempDir& dir) {
  return spawn_shell("sh -c \"trap '' INT TERM; exec " + std::string(LMZOO_BINARY) + " " + args + "\"", dir / "out",
                     dir / "err");
}

// Waits until FILE contains TEXT (or about 20 s pass); true when it does.
bool wait_for_text(const std::string& file, const std::string& text) {
  for (int i = 0; i < 800; ++i) {
    if (read_text(file).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

// The lines of S.
std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A gpt run trained for 2 steps (the checkpoint the signal tests resume or evaluate), once per process.
const std::string& trained_run() {
  static TempDir root;
  static const std::string run = [] {
    const std::string dir = root / "run";
    const CliResult r = run_cli("train --data " + tiny_corpus("char").data_dir + " --out " + dir + kTiny +
                                "--steps 2 --eval-interval 2");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return dir;
  }();
  return run;
}

// The hidden staging entries .NAME.tmp-* beside DIR/NAME, sorted.
std::vector<std::string> staging_leftovers(const fs::path& dir, const std::string& name) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind("." + name + ".tmp-", 0) == 0) found.push_back(file);
  }
  std::sort(found.begin(), found.end());
  return found;
}

void check_no_crash_text(const std::string& err) {
  for (const char* crash : {"corrupted", "terminate called", "Aborted", "double free", "Sanitizer", "runtime error:",
                            "Exception raised from"}) {
    CHECK(err.find(crash) == std::string::npos);
  }
}

}  // namespace

TEST_CASE("train: two SIGINTs 50 ms apart stop it with 130, one line each, a loadable checkpoint", "[signal][train]") {
  // The second signal lands at a different moment of the first one's save each time.
  for (int attempt = 0; attempt < 6; ++attempt) {
    TempDir dir;
    const std::string run = dir / "run";
    fs::copy(trained_run(), run, fs::copy_options::recursive);
    const pid_t pid = spawn_ignoring_signals("train --resume " + run + " --steps 100000 --eval-interval 7", dir);
    REQUIRE(wait_for_text(dir / "err", "step 4"));
    ::kill(pid, SIGINT);
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + 10 * attempt));
    ::kill(pid, SIGINT);
    const int code = wait_exit_code(pid);
    const std::string err = read_text(dir / "err");
    INFO("attempt " << attempt << ", stderr:\n" << err);
    CHECK(code == 130);
    check_no_crash_text(err);
    // The last line says how it stopped: saved after the first signal; at once on the second, during the save
    // ("interrupted again") or after it (the saved line, then "interrupted").
    const auto lines = lines_of(err);
    REQUIRE(lines.size() >= 2);
    const std::string& last = lines.back();
    const auto is_saved = [&](const std::string& line) {
      return line.find("interrupted: saved " + run + "/last at step") != std::string::npos;
    };
    const bool saved = is_saved(last);
    const bool during_save = last == "lmzoo train: interrupted again: stopped at once (files are written whole or "
                                     "not at all)";
    const bool after_save = last == "lmzoo train: interrupted" && is_saved(lines[lines.size() - 2]);
    CHECK((saved || during_save || after_save));
    // Either way a complete checkpoint is there, at step 2 or later, that --resume continues from.
    const CheckpointInfo found = read_checkpoint(run + "/last");
    CHECK(found.state.step >= 2);
    const CliResult resumed = run_cli("train --resume " + run + " --steps " + std::to_string(found.state.step + 1));
    INFO(resumed.err);
    CHECK(resumed.exit_code == 0);
  }
}

TEST_CASE("eval and generate stop on SIGINT with 130, even when started with it ignored", "[signal]") {
  const std::string ckpt = trained_run();
  TempDir dir;
  // Many windows (stride 1 over a long text): evaluation runs for far longer than the test waits. Words of random
  // syllables (95 consonant-vowel pairs), so that a tokenizer trained on it has many pieces to find: about 8 s on an
  // idle 2-core machine, well past the 1.5 s the test waits (12 syllables took 1.4 s, and the signal came too late).
  std::mt19937 rng(25);
  std::vector<std::string> syllables;
  for (char consonant : std::string("bcdfghjklmnprstvwxz")) {
    for (char vowel : std::string("aeiou")) syllables.push_back({consonant, vowel});
  }
  std::string text;
  while (text.size() < 2000000) {
    for (int s = 0, n = 1 + int(rng() % 4); s < n; ++s) text += syllables[rng() % syllables.size()];
    text += rng() % 9 == 0 ? ".\n" : " ";
  }
  write_text(dir / "long.txt", text);

  SECTION("eval") {
    const pid_t pid = spawn_ignoring_signals("eval --checkpoint " + ckpt + " --text " + (dir / "long.txt") +
                                                 " --stride 1 --batch-size 1 --device cpu",
                                             dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    const auto sent = std::chrono::steady_clock::now();
    ::kill(pid, SIGINT);
    const int code = wait_exit_code(pid);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
    const std::string err = read_text(dir / "err");
    INFO(err);
    CHECK(code == 130);
    CHECK(seconds < 5);
    CHECK(count_lines(err) == 1);
    CHECK(err.rfind("lmzoo eval: interrupted", 0) == 0);
    CHECK(read_text(dir / "out").empty());  // no result line for a half-scored text
  }
  SECTION("generate prints what it produced") {
    const pid_t pid = spawn_ignoring_signals("generate --checkpoint " + ckpt +
                                                 " --prompt 'the quick' --max-new-tokens 200000 --temperature 1 --ignore-eos "
                                                 "--device cpu",
                                             dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
    ::kill(pid, SIGINT);
    const int code = wait_exit_code(pid);
    const std::string err = read_text(dir / "err"), out = read_text(dir / "out");
    INFO(err);
    CHECK(code == 130);
    CHECK(err == "lmzoo generate: interrupted: printed what was generated so far\n");
    CHECK(out.rfind("the quick", 0) == 0);
    CHECK(out.size() > std::string("the quick\n").size());  // tokens were generated before the signal
  }
  SECTION("SIGTERM to a command that checks for no signal: at once, 130, one line") {
    const pid_t pid = spawn_ignoring_signals("tokenizer train --input " + (dir / "long.txt") +
                                                 " --out " + (dir / "tok") + " --vocab-size 8000",
                                             dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    ::kill(pid, SIGTERM);
    const int code = wait_exit_code(pid);
    const std::string err = read_text(dir / "err");
    INFO(err);
    CHECK(code == 130);
    CHECK(err == "lmzoo tokenizer: interrupted\n");
    CHECK_FALSE(fs::exists(dir / "tok/tokenizer.model"));
    // The next run into the same --out removes what the killed one left (.tok.tmp-PID), and finishes.
    write_text(dir / "short.txt", text.substr(0, 20000));
    const CliResult again = run_cli("tokenizer train --input " + (dir / "short.txt") + " --out " + (dir / "tok") +
                                    " --vocab-size 400");
    INFO(again.err);
    CHECK(again.exit_code == 0);
    CHECK(staging_leftovers(dir.path, "tok").empty());
  }
}

TEST_CASE("prepare stops on SIGINT with 130 and one line, its staged directory removed", "[signal][prepare]") {
  TempDir dir;
  // 40 MB of short documents: far longer to encode than the wait for the first shard.
  std::string text;
  std::mt19937 rng(3);
  while (text.size() < 40000000) text += "the cat sat on mat number " + std::to_string(rng() % 100000) + ".\n\n";
  write_text(dir / "big.txt", text);
  const pid_t pid = spawn_shell(std::string(LMZOO_BINARY) + " prepare --tokenizer " + tiny_corpus("char").tokenizer_dir +
                                    " --input " + (dir / "big.txt") + " --out " + (dir / "data") + " --threads 1",
                                dir / "out", dir / "err");
  bool staging = false;  // the staged directory .data.tmp-PID exists: encoding has started
  for (int i = 0; i < 800 && !staging; ++i) {
    staging = !staging_leftovers(dir.path, "data").empty();
    if (!staging) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  REQUIRE(staging);
  ::kill(pid, SIGINT);
  const int code = wait_exit_code(pid);
  const std::string err = read_text(dir / "err");
  INFO(err);
  CHECK(code == 130);
  CHECK(err == "lmzoo prepare: interrupted while preparing (nothing written)\n");
  CHECK(staging_leftovers(dir.path, "data").empty());
  CHECK_FALSE(fs::exists(dir / "data"));
}

TEST_CASE("prepare and import remove the staging directories of dead processes, not of live ones",
          "[signal][prepare][import]") {
  TempDir dir;
  const pid_t dead = spawn_shell("true", dir / "true.out", dir / "true.err");
  wait_exit_code(dead);  // reaped: no process has this pid now
  const std::string live = std::to_string(::getpid()), gone = std::to_string(dead);
  for (const std::string name : {"data", "ck"}) {
    fs::create_directories(dir / ("." + name + ".tmp-" + gone));
    fs::create_directories(dir / ("." + name + ".tmp-" + live));
    write_text(fs::path(dir / ("." + name + ".tmp-" + gone)) / "train_0000.bin", "partial");
    write_text(dir / ("." + name + ".tmp-" + gone + "-3"), "partial file");
    write_text(fs::path(dir / ("." + name + ".tmp-" + live)) / "x", "another process at work");
  }
  const Fixture& f = tiny_corpus("char");
  const CliResult prepared = run_cli("prepare --tokenizer " + f.tokenizer_dir + " --input " + f.text_file + " --out " +
                                     (dir / "data"));
  INFO(prepared.err);
  CHECK(prepared.exit_code == 0);
  const CliResult trained = run_cli("train --data " + f.data_dir + " --out " + (dir / "run") + kTiny +
                                    "--bias --steps 1 --eval-interval 1");  // GPT-2's shape: with biases
  INFO(trained.err);
  REQUIRE(trained.exit_code == 0);
  const CliResult exported = run_cli("export --checkpoint " + (dir / "run") + " --format hf --out " + (dir / "hf"));
  INFO(exported.err);
  REQUIRE(exported.exit_code == 0);
  const CliResult imported = run_cli("import " + (dir / "hf") + " --out " + (dir / "ck"));
  INFO(imported.err);
  CHECK(imported.exit_code == 0);
  for (const std::string name : {"data", "ck"}) {
    CHECK(staging_leftovers(dir.path, name) == std::vector<std::string>{"." + name + ".tmp-" + live});
  }
}
