// A full disk outside checkpoints (RLIMIT_FSIZE: EFBIG, as in test_checkpoint_faults.cpp): export (TorchScript and
// hf), import, prepare, tokenizer train, a metrics.jsonl append and plot's SVG each fail in one line, leave nothing
// partial behind and keep the previous output byte for byte.
#include "tests/catch_compat.h"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_helpers.h"
#include "tests/file_trees.h"
#include "tests/fixtures.h"

using namespace lmzoo::test;
namespace fs = std::filesystem;

namespace {

// With biases: GPT-2's shape, so that export --format hf applies.
const std::string kTinyGpt = " --n-layer 1 --n-head 2 --d-model 16 --seq-len 16 --batch-size 4 --eval-iters 1 "
                             "--warmup 1 --bias --device cpu ";

// A run directory trained to step 4 (last/ at step 4, metrics.jsonl, curves.svg), made once per process.
const std::string& base_run() {
  static TempDir root;
  static const std::string run = [] {
    const std::string dir = root / "run";
    const auto r = run_cli("train --data " + tiny_corpus("bpe").data_dir + " --out " + dir + kTinyGpt +
                           "--steps 4 --eval-interval 4");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return dir;
  }();
  return run;
}

// `lmzoo ARGS` under `ulimit -f LIMIT_KB` with SIGXFSZ ignored, so that a write past the limit fails with EFBIG.
CliResult run_limited(const std::string& args, int64_t limit_kb) {
  TempDir io;
  const std::string cmd = "bash -c \"trap '' XFSZ; ulimit -f " + std::to_string(limit_kb) + "; exec " +
                          std::string(LMZOO_BINARY) + " " + args + "\" >" + (io / "out") + " 2>" + (io / "err") +
                          " </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_text(io / "out");
  r.err = read_text(io / "err");
  return r;
}

// True when this shell enforces `ulimit -f` with EFBIG (the mechanism every case here relies on).
bool file_size_limit_works() {
  TempDir dir;
  const std::string cmd = "bash -c \"trap '' XFSZ; ulimit -f 1 && head -c 4096 /dev/zero >" + (dir / "probe") +
                          "\" 2>/dev/null";
  const int status = std::system(cmd.c_str());
  std::error_code ec;
  return status != 0 && fs::file_size(dir / "probe", ec) == 1024;
}

#define REQUIRE_FILE_SIZE_LIMIT()                                                         \
  do {                                                                                    \
    if (!file_size_limit_works()) {                                                       \
      WARN("ulimit -f does not limit file sizes here: the disk-full case is not checked"); \
      return;                                                                             \
    }                                                                                     \
  } while (0)

// R failed as one line from `lmzoo COMMAND` saying that PATH could not be written because the file was too large.
void check_one_line(const CliResult& r, const std::string& command, const std::string& path) {
  INFO("exit " << r.exit_code << ", stderr: " << r.err);
  CHECK(r.exit_code == 1);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.rfind("lmzoo " + command + ": error: cannot write " + path, 0) == 0);
  CHECK(r.err.find(": File too large\n") != std::string::npos);
}

// `lmzoo COMMAND ARGS` writing the one file OUT (holding PREVIOUS) under a LIMIT_KB file-size limit: one line
// naming OUT, OUT unchanged, no temporary sibling left; without the limit it succeeds and writes more than that.
void check_single_file_kept(const std::string& command, const std::string& args, const TempDir& dir,
                            const std::string& out, const std::string& previous, int64_t limit_kb) {
  write_text(out, previous);
  const auto r = run_limited(command + " " + args + " --out " + out, limit_kb);
  check_one_line(r, command, out + ": ");
  CHECK(read_text(out) == previous);
  CHECK(hidden_entries(dir.path).empty());
  CHECK(run_cli(command + " " + args + " --out " + out).exit_code == 0);  // the limit was the cause
  CHECK(fs::file_size(out) > uintmax_t(limit_kb) * 1024);
}

}  // namespace

TEST_CASE("disk full: export keeps the previous TorchScript file and leaves no partial one", "[disk_full]") {
  REQUIRE_FILE_SIZE_LIMIT();
  TempDir dir;
  check_single_file_kept("export", "--checkpoint " + base_run(), dir, dir / "model.pt", "the previous export", 8);
}

TEST_CASE("disk full: export --format hf keeps the previous directory whole", "[disk_full]") {
  REQUIRE_FILE_SIZE_LIMIT();
  TempDir dir;
  const std::string out = dir / "hf";
  REQUIRE(run_cli("export --checkpoint " + base_run() + " --format hf --out " + out).exit_code == 0);
  write_text(out + "/config.json", "{\"previous\": true}\n");  // so that a rewritten file would show
  const auto before = tree_bytes(out);
  const int64_t limit_kb = int64_t(fs::file_size(out + "/model.safetensors") / 1024);  // model.safetensors fails
  const auto r = run_limited("export --checkpoint " + base_run() + " --format hf --out " + out, limit_kb);
  check_one_line(r, "export", out + "/model.safetensors: ");
  CHECK((tree_bytes(out) == before));
  CHECK(hidden_entries(dir.path).empty());
  const auto fresh = run_limited("export --checkpoint " + base_run() + " --format hf --out " + (dir / "new/hf"), 1);
  check_one_line(fresh, "export", dir / "new/hf/model.safetensors: ");
  CHECK_FALSE(fs::exists(dir / "new"));  // nor its parent
}

TEST_CASE("disk full: import leaves no checkpoint and keeps the one it would replace", "[disk_full]") {
  REQUIRE_FILE_SIZE_LIMIT();
  TempDir dir;
  const std::string hf = dir / "hf", out = dir / "ckpt";
  REQUIRE(run_cli("export --checkpoint " + base_run() + " --format hf --out " + hf).exit_code == 0);
  const auto model_kb = int64_t(fs::file_size(base_run() + "/last/model.pt") / 1024);
  auto fresh = run_limited("import " + hf + " --out " + out, model_kb);
  check_one_line(fresh, "import", dir / ".ckpt.tmp-");
  CHECK_FALSE(fs::exists(out));
  CHECK(hidden_entries(dir.path).empty());

  REQUIRE(run_cli("import " + hf + " --out " + out).exit_code == 0);
  const auto before = tree_bytes(out);
  const auto r = run_limited("import " + hf + " --out " + out, model_kb);
  check_one_line(r, "import", dir / ".ckpt.tmp-");
  CHECK((tree_bytes(out) == before));
  CHECK(hidden_entries(dir.path).empty());
}

TEST_CASE("disk full: prepare keeps the previous data directory whole", "[disk_full]") {
  REQUIRE_FILE_SIZE_LIMIT();
  const Fixture& f = tiny_corpus("bpe");
  TempDir dir;
  const std::string out = dir / "data";
  fs::copy(f.data_dir, out, fs::copy_options::recursive);
  write_text(out + "/notes.txt", "the user's own file");
  const auto before = tree_bytes(out);
  const int64_t limit_kb = int64_t(fs::file_size(out + "/train_0000.bin") / 1024) - 1;  // the train shard fails
  const std::string args = "prepare --tokenizer " + f.tokenizer_dir + " --input " + f.text_file + " --out " + out;
  const auto r = run_limited(args, limit_kb);
  check_one_line(r, "prepare", out + "/train_0000.bin: ");
  CHECK((tree_bytes(out) == before));
  CHECK(hidden_entries(dir.path).empty());
  const auto fresh = run_limited("prepare --tokenizer " + f.tokenizer_dir + " --input " + f.text_file + " --out " +
                                     (dir / "new/data"), limit_kb);
  check_one_line(fresh, "prepare", dir / "new/data/train_0000.bin: ");
  CHECK_FALSE(fs::exists(dir / "new"));
  CHECK(hidden_entries(dir.path).empty());
}

TEST_CASE("disk full: tokenizer train keeps the previous tokenizer.model", "[disk_full]") {
  REQUIRE_FILE_SIZE_LIMIT();
  const Fixture& f = tiny_corpus("bpe");
  TempDir dir;
  const std::string out = dir / "tok";
  fs::create_directories(out);
  write_text(out + "/tokenizer.model", "the previous model");
  const std::string args = "tokenizer train --input " + f.text_file + " --vocab-size 512 --out " + out;
  const auto r = run_limited(args, 1);
  check_one_line(r, "tokenizer", out + "/tokenizer.model: ");
  CHECK(read_text(out + "/tokenizer.model") == "the previous model");
  CHECK((tree_bytes(out).size() == 1));
  CHECK(hidden_entries(dir.path).empty());
  CHECK(run_cli(args).exit_code == 0);
  CHECK(fs::file_size(out + "/tokenizer.model") > 1024);
}

TEST_CASE("disk full: a metrics.jsonl append that fails leaves the file as it was and stops the run", "[disk_full]") {
  REQUIRE_FILE_SIZE_LIMIT();
  TempDir dir;
  const std::string run = dir / "run";
  fs::copy(base_run(), run, fs::copy_options::recursive);
  // A record padding metrics.jsonl to 40 bytes short of 4 KiB: the first record the resumed run appends crosses the
  // limit (the checkpoint files written later are larger, but the run never gets there).
  std::string metrics = read_text(run + "/metrics.jsonl");
  const std::string head = "{\"type\":\"note\",\"step\":1,\"pad\":\"", tail = "\"}\n";
  metrics += head + std::string(4096 - 40 - metrics.size() - head.size() - tail.size(), 'x') + tail;
  write_text(run + "/metrics.jsonl", metrics);
  const auto last_before = tree_bytes(run + "/last");
  const auto r = run_limited("train --resume " + run + " --steps 8 --log-interval 1", 4);
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 1);
  const std::string last_line = r.err.substr(r.err.rfind('\n', r.err.size() - 2) + 1);
  CHECK(last_line == "lmzoo train: error: cannot write " + run + "/metrics.jsonl: File too large\n");
  CHECK(r.err.find("error:") == r.err.rfind("error:"));  // one error line
  CHECK(read_text(run + "/metrics.jsonl") == metrics);    // no torn record
  CHECK((tree_bytes(run + "/last") == last_before));
  CHECK(hidden_entries(run).empty());
}

TEST_CASE("disk full: plot keeps the previous SVG", "[disk_full]") {
  REQUIRE_FILE_SIZE_LIMIT();
  TempDir dir;
  check_single_file_kept("plot", base_run(), dir, dir / "curves.svg", "<svg>the previous picture</svg>", 1);
}
