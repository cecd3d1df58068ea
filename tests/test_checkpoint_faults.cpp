// Checkpoint faults: a full disk (RLIMIT_FSIZE: EFBIG) leaves the previous checkpoint intact, a kill at
// every step of the swap leaves one complete checkpoint that loads and resumes, recovery of leftovers, running out
// of memory ends in one line with the estimate, and strict loading (weights against config.json both ways,
// tokenizer against vocab_size).
#include "tests/catch_compat.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "models/memory_estimate.h"
#include "models/registry.h"
#include "tests/checkpoint_compare.h"
#include "tests/cli_checks.h"
#include "tests/cli_helpers.h"
#include "tests/file_trees.h"
#include "tests/fixtures.h"
#include "tests/model_fixtures.h"
#include "train/checkpoint/checkpoint.h"

using namespace lmzoo;
using namespace lmzoo::test;
namespace fs = std::filesystem;

namespace {

const std::string kTinyGpt = " --n-layer 1 --n-head 2 --d-model 16 --seq-len 16 --batch-size 4 --eval-iters 1 --warmup 1 --device cpu ";

// A run directory trained to step 4 through the CLI (last/ and best/ at step 4), made once per process.
const std::string& base_run() {
  static TempDir root;
  static const std::string run = [] {
    const Fixture& f = tiny_corpus("char");
    const std::string dir = root / "run";
    auto r = run_cli("train --data " + f.data_dir + " --out " + dir + kTinyGpt + "--steps 4 --eval-interval 4");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return dir;
  }();
  return run;
}

// base_run() resumed to step 8 without faults: the weights a killed resume must have left at step 8.
const std::string& reference_run() {
  static TempDir root;
  static const std::string run = [] {
    const std::string dir = root / "reference";
    fs::copy(base_run(), dir, fs::copy_options::recursive);
    auto r = run_cli("train --resume " + dir + " --steps 8");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return dir;
  }();
  return run;
}

std::string copy_of_base(const TempDir& dir, const std::string& name) {
  const std::string run = dir / name;
  fs::copy(base_run(), run, fs::copy_options::recursive);
  return run;
}

// Sets an environment variable for the commands run in its scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) { setenv(name.c_str(), value.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

// A weights-only checkpoint of a tiny model with the fixture's real tokenizer.
CheckpointInfo tiny_checkpoint(const std::string& dir, ModelConfig config, int64_t step) {
  const Fixture& f = tiny_corpus("char");
  CheckpointInfo info;
  info.model = config;
  info.state.step = step;
  info.tokenizer_model = read_text(f.tokenizer_dir + "/tokenizer.model");
  AnyModel model = build_model(config);
  save_checkpoint(dir, model.module(), nullptr, info);
  return info;
}

void edit_config(const std::string& dir, const std::string& field, int64_t value) {
  auto config = nlohmann::json::parse(read_text(dir + "/config.json"));
  config["model"][field] = value;
  write_text(dir + "/config.json", config.dump(2));
}

}  // namespace

TEST_CASE("a kill at each step of the checkpoint swap leaves one complete checkpoint", "[checkpoint][faults]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  struct Case {
    const char* step;
    int64_t found_step;  // the step of the complete checkpoint left
    bool last_exists;
    size_t hidden;  // .last.tmp-* / .last.old left by the kill
  };
  const Case c = GENERATE(Case{"files-written", 4, true, 1}, Case{"marker-written", 4, true, 1},
                          Case{"old-moved", 8, false, 2}, Case{"new-moved", 8, true, 1}, Case{"old-removed", 8, true, 0});
  INFO("killed at " << c.step);
  const std::string run = copy_of_base(dir, c.step);
  {
    ScopedEnv crash("LMZOO_TEST_CRASH_AT", c.step);
    const auto killed = run_binary(LMZOO_FAULTS_BINARY, "train --resume " + run + " --steps 8");
    INFO(killed.err);
    REQUIRE(killed.exit_code != 0);
    CHECK(killed.out.empty());  // died before printing its result
  }
  // The state the kill left shows it happened at that step.
  CHECK(fs::exists(run + "/last") == c.last_exists);
  CHECK(hidden_entries(run).size() == c.hidden);

  // Read-only lookup (eval, generate, export, --resume) finds the complete checkpoint, with the right weights.
  const CheckpointInfo found = read_checkpoint(run + "/last");
  CHECK(found.state.step == c.found_step);
  CHECK(same_weights(found.dir, c.found_step == 4 ? base_run() + "/last" : reference_run() + "/last"));
  if (!c.last_exists) {  // the CLI too (once: a CLI call costs a second)
    const auto eval = run_cli("eval --checkpoint " + run + "/last --data " + f.data_dir + " --device cpu --batch-size 64");
    INFO(eval.err);
    CHECK(eval.exit_code == 0);
  }

  // `train --resume` recovers under the run's lock (the complete checkpoint back in place as last/, the
  // leftovers gone, other files kept) and continues from the step found.
  const auto resumed = run_cli("train --resume " + run + " --steps 12");
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.err.find("steps " + std::to_string(c.found_step) + " -> 12") != std::string::npos);
  CHECK(last_json_line(resumed.out)["step"] == 12);
  CHECK(read_checkpoint(run + "/last").state.step == 12);
  CHECK(hidden_entries(run).empty());
  CHECK(fs::exists(run + "/metrics.jsonl"));
}

TEST_CASE("a full disk (EFBIG) fails the save in one line, keeping the previous checkpoint", "[checkpoint][faults]") {
  TempDir dir;
  const auto last = base_run() + "/last";
  // The files in the order save_checkpoint writes them; the limit falls inside model.pt or optimizer.pt.
  const std::vector<std::string> order = {"config.json", "tokenizer.model", "model.pt", "optimizer.pt", "rng.pt"};
  const auto size_kb = [&last](const std::string& file) { return int64_t(fs::file_size(last + "/" + file) / 1024); };
  const int64_t small_files_kb = std::max({size_kb("config.json"), size_kb("tokenizer.model"),
                                           int64_t(fs::file_size(base_run() + "/metrics.jsonl") / 1024)}) + 1;
  const int64_t model_kb = size_kb("model.pt") + 1;
  const int64_t limit_kb = GENERATE_COPY(small_files_kb, model_kb);
  std::string failing;
  for (const auto& file : order) {
    if (failing.empty() && fs::file_size(last + "/" + file) > uintmax_t(limit_kb) * 1024) failing = file;
  }
  INFO("limit " << limit_kb << " KiB, expected to fail at " << failing);
  REQUIRE((failing == "model.pt" || failing == "optimizer.pt"));

  const std::string run = copy_of_base(dir, "run");
  const auto last_before = tree_bytes(run + "/last"), best_before = tree_bytes(run + "/best");
  const std::string cmd = "bash -c \"trap '' XFSZ; ulimit -f " + std::to_string(limit_kb) + "; exec " +
                          std::string(LMZOO_BINARY) + " train --resume " + run + " --steps 8\" >" + (dir / "out") +
                          " 2>" + (dir / "err") + " </dev/null";
  const int status = std::system(cmd.c_str());
  const std::string err = read_text(dir / "err");
  INFO("stderr: " << err);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) != 0));  // an exit, not a signal
  // The last stderr line (after the progress lines) is the one error line.
  const std::string last_line = err.substr(err.rfind('\n', err.size() - 2) + 1);
  CHECK(last_line.find("error: cannot write " + run + "/.last.tmp-") != std::string::npos);
  CHECK(last_line.find("/" + failing + ": File too large\n") != std::string::npos);
  CHECK(err.find("error:") == err.rfind("error:"));  // one error line
  CHECK(err.find("terminate") == std::string::npos);
  CHECK(hidden_entries(run).empty());  // no partial directory left
  CHECK((tree_bytes(run + "/last") == last_before));  // the previous checkpoint, byte for byte
  CHECK((tree_bytes(run + "/best") == best_before));
}

TEST_CASE("lookup and recovery of swap leftovers: newest complete wins, incomplete ones go", "[checkpoint][faults]") {
  TempDir dir;
  const std::string run = dir / "run";
  fs::create_directories(run);
  const ModelConfig config = tiny_gpt_config(tiny_corpus("char").vocab_size);
  tiny_checkpoint(run + "/.last.old", config, 4);
  tiny_checkpoint(run + "/.last.tmp-77", config, 8);
  tiny_checkpoint(run + "/.last.tmp-78", config, 12);
  fs::remove(run + "/.last.tmp-78/complete");  // killed before its marker
  tiny_checkpoint(run + "/.best.tmp-79", config, 2);
  fs::remove(run + "/.best.tmp-79/complete");
  write_text(run + "/metrics.jsonl", "{}\n");
  write_text(run + "/.lock", "");
  fs::create_directories(run + "/.other.tmp-5");
  fs::create_directories(run + "/notes");

  // Read-only: no last/ or best/; the complete sibling with the highest step, by every path form.
  CHECK(resolve_checkpoint_dir(run) == run + "/.last.tmp-77");
  CHECK(resolve_checkpoint_dir(run + "/last") == run + "/.last.tmp-77");
  CHECK(resolve_checkpoint_dir(run + "/last/") == run + "/.last.tmp-77");
  CHECK_THROWS_WITH(resolve_checkpoint_dir(run + "/best"), Catch::Contains("does not exist"));

  recover_run_dir(run);
  CHECK(read_checkpoint(run + "/last").state.step == 8);
  CHECK(hidden_entries(run) == std::set<std::string>{".other.tmp-5"});  // others' files are left alone
  CHECK(fs::exists(run + "/.lock"));
  CHECK(read_text(run + "/metrics.jsonl") == "{}\n");
  CHECK(fs::exists(run + "/notes"));
  CHECK_FALSE(fs::exists(run + "/best"));
  // A path read before recovery moved it still finds the checkpoint.
  CHECK(resolve_checkpoint_dir(run + "/.last.tmp-77") == run + "/last");

  // An incomplete target (a damaged last/) never costs the only complete copy.
  tiny_checkpoint(run + "/.last.old", config, 4);
  fs::remove(run + "/last/complete");
  fs::remove(run + "/last/trainer_state.json");
  CHECK(resolve_checkpoint_dir(run) == run + "/.last.old");
  recover_run_dir(run);
  CHECK(fs::exists(run + "/.last.old/complete"));
  CHECK(resolve_checkpoint_dir(run + "/last") == run + "/.last.old");
}

TEST_CASE("checkpoints of older lmzoo (no marker) still load and recover", "[checkpoint][faults]") {
  TempDir dir;
  const std::string run = dir / "run";
  const ModelConfig config = tiny_gpt_config(tiny_corpus("char").vocab_size);
  tiny_checkpoint(run + "/last", config, 6);
  fs::remove(run + "/last/complete");
  CHECK(resolve_checkpoint_dir(run) == run + "/last");
  CHECK(read_checkpoint(run + "/last").state.step == 6);
  recover_run_dir(run);
  CHECK(fs::exists(run + "/last/trainer_state.json"));

  // Older lmzoo killed between its renames: a complete .last.old, a .last.tmp without a marker.
  fs::rename(run + "/last", run + "/.last.old");
  tiny_checkpoint(run + "/.last.tmp-99", config, 9);
  fs::remove(run + "/.last.tmp-99/complete");
  CHECK(resolve_checkpoint_dir(run + "/last") == run + "/.last.old");
  recover_run_dir(run);
  CHECK(read_checkpoint(run + "/last").state.step == 6);
  CHECK(hidden_entries(run).empty());
}

TEST_CASE("loading checks every weight against config.json both ways", "[checkpoint][faults]") {
  TempDir dir;
  const Fixture& f = tiny_corpus("char");
  ModelConfig config = tiny_gpt_config(f.vocab_size);
  config.vocab_multiple = 64;  // padded rows: vocab_size stays the tokenizer's, and loads
  const std::string ckpt = dir / "ckpt";
  tiny_checkpoint(ckpt, config, 1);
  CHECK_NOTHROW(load_model(read_checkpoint(ckpt), torch::kCPU));

  edit_config(ckpt, "n_layer", 1);
  CHECK_THROWS_WITH(load_model(read_checkpoint(ckpt), torch::kCPU),
                    Catch::Contains("checkpoint " + ckpt + " does not match its config.json: model.pt has h.1.") &&
                        Catch::Contains("not in the model") && Catch::Contains("more)"));
  check_user_error(run_cli("eval --checkpoint " + ckpt + " --data " + f.data_dir + " --device cpu"),
                   "does not match its config.json");
  edit_config(ckpt, "n_layer", 3);
  CHECK_THROWS_WITH(load_model(read_checkpoint(ckpt), torch::kCPU),
                    Catch::Contains("the model's h.2.") && Catch::Contains("is missing from model.pt"));
  edit_config(ckpt, "n_layer", 2);
  edit_config(ckpt, "d_model", 16);
  CHECK_THROWS_WITH(load_model(read_checkpoint(ckpt), torch::kCPU), Catch::Contains("in model.pt but [") &&
                                                                        Catch::Contains(", 16] in the model"));
  edit_config(ckpt, "d_model", config.d_model);
  edit_config(ckpt, "vocab_size", f.vocab_size + 1);
  CHECK_THROWS_WITH(read_checkpoint(ckpt), Catch::Contains("tokenizer.model has " + std::to_string(f.vocab_size) +
                                                           " pieces, config.json's vocab_size is " +
                                                           std::to_string(f.vocab_size + 1)));
}

TEST_CASE("a bert checkpoint loads into a classifier's encoder, checked against that encoder", "[checkpoint][faults]") {
  TempDir dir;
  const Fixture& f = tiny_corpus("char");
  const ModelConfig bert = tiny_bert_config(f.vocab_size);
  const std::string ckpt = dir / "bert";
  tiny_checkpoint(ckpt, bert, 3);
  ModelConfig with_labels = bert;
  with_labels.labels = {"no", "yes"};
  AnyModel classifier = build_model(with_labels);
  CHECK_NOTHROW(init_from_checkpoint(classifier, read_checkpoint(ckpt)));
  ModelConfig with_dropout = with_labels;  // lmzoo train --init RUN --dropout 0.1: the same tensors
  with_dropout.dropout = 0.1;
  AnyModel fine_tuned = build_model(with_dropout);
  init_from_checkpoint(fine_tuned, read_checkpoint(ckpt));
  CHECK(torch::equal(fine_tuned.as<BertClassifier>()->bert->word_embeddings->weight,
                     classifier.as<BertClassifier>()->bert->word_embeddings->weight));

  edit_config(ckpt, "n_layer", 1);  // config.json lowered: the classifier built from it has one block
  with_labels.n_layer = 1;
  AnyModel smaller = build_model(with_labels);
  CHECK_THROWS_WITH(init_from_checkpoint(smaller, read_checkpoint(ckpt)),
                    Catch::Contains("does not match its config.json: model.pt has"));
}

TEST_CASE("running out of memory mid-run ends in one line naming the estimate and the switches; last/ is kept",
          "[checkpoint][faults]") {
  TempDir dir;
  const std::string run = copy_of_base(dir, "run");
  const auto last_before = tree_bytes(run + "/last");
  // The estimate the line must name: train --dry-run's for the same resumed run.
  const auto dry = run_cli("train --resume " + run + " --steps 8 --dry-run");
  INFO(dry.err);
  REQUIRE(dry.exit_code == 0);
  const double predicted = last_json_line(dry.out)["predicted_peak_bytes"].get<double>();
  CliResult r;
  {
    ScopedEnv oom("LMZOO_TEST_OOM_AT_STEP", "6");  // after steps 5 and 6 ran: no checkpoint since step 4
    r = run_binary(LMZOO_FAULTS_BINARY, "train --resume " + run + " --steps 8");
  }
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  const std::string last_line = r.err.substr(r.err.rfind('\n', r.err.size() - 2) + 1);
  CHECK(last_line.rfind("lmzoo train: error: out of memory on cpu: this run needs about " + format_bytes(predicted), 0) == 0);
  for (const char* lever : {"--activation-checkpointing blocks", "--fused-loss", "--batch-size", "--grad-accum", "--lora-rank"}) {
    CHECK(last_line.find(lever) != std::string::npos);
  }
  CHECK(r.err.find("error:") == r.err.rfind("error:"));  // one error line, no backtrace
  CHECK(r.err.find("injected") == std::string::npos);
  CHECK((tree_bytes(run + "/last") == last_before));
  CHECK(hidden_entries(run).empty());
}
