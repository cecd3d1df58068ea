// The training API a program uses without the CLI (train/run/run_training.h): step callbacks that see every step's
// loss, an early stop a callback asks for (last/ saved, resumable), and a new run set up through the library that
// writes the same checkpoint as lmzoo train with the same settings.
#include "tests/catch_compat.h"

#include <cmath>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/checkpoint_compare.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"
#include "tests/model_fixtures.h"
#include "train/checkpoint/checkpoint.h"
#include "train/run/resume_setup.h"
#include "train/run/run_training.h"

// Exported by libopenblas, which LibTorch loads; weak so that other BLAS builds still link.
extern "C" int openblas_get_num_threads() __attribute__((weak));

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

// A tiny gpt on the char corpus, its vocabulary the data's (vocab_size 0), every step logged.
RunSpec tiny_spec(const Fixture& f, const std::string& out_dir, int64_t steps) {
  RunSpec spec;
  spec.model = tiny_gpt_config(0);
  spec.train.data_dir = f.data_dir;
  spec.train.out_dir = out_dir;
  spec.train.steps = steps;
  spec.train.batch_size = 4;
  spec.train.lr = 3e-3;
  spec.train.warmup = 2;
  spec.train.eval_interval = 4;
  spec.train.eval_iters = 1;
  spec.train.log_interval = 1;
  spec.train.device = "cpu";
  return spec;
}

// run_training of SPEC as a new run, quietly, with CALLBACKS.
TrainResult train_quietly(const RunSpec& spec, const TrainCallbacks& callbacks = {}) {
  return run_training({"", [&] {
                         TrainRequest request = new_run_request(spec);
                         request.show_progress = false;
                         request.callbacks = callbacks;
                         return request;
                       }});
}

// The step and loss of every train record of RUN_DIR/metrics.jsonl.
std::vector<std::pair<int64_t, double>> logged_losses(const std::string& run_dir) {
  std::vector<std::pair<int64_t, double>> losses;
  std::istringstream lines(read_text(run_dir + "/metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record["type"] == "train") losses.emplace_back(record["step"].get<int64_t>(), record["loss"].get<double>());
  }
  return losses;
}

}  // namespace

TEST_CASE("train API: the step callback sees every step in order, with metrics.jsonl's losses", "[train][train_api]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  std::vector<std::pair<int64_t, double>> seen;
  std::vector<int64_t> evaluated;
  TrainCallbacks callbacks;
  callbacks.on_step = [&](const StepReport& s) {
    CHECK(s.lr > 0);
    CHECK(s.tokens_per_s > 0);
    seen.emplace_back(s.step, s.train_loss);
    return RunControl::kContinue;
  };
  callbacks.on_eval = [&](const ValidationReport& e) {
    CHECK(std::isfinite(e.val_loss));
    evaluated.push_back(e.step);
    return RunControl::kContinue;
  };
  const TrainResult result = train_quietly(tiny_spec(f, dir / "run", 6), callbacks);
  CHECK_FALSE(result.interrupted);
  REQUIRE(seen.size() == 6);
  for (size_t i = 0; i < seen.size(); ++i) CHECK(seen[i].first == int64_t(i) + 1);
  CHECK(seen == logged_losses(dir / "run"));
  CHECK((evaluated == std::vector<int64_t>{4, 6}));
}

TEST_CASE("train API: a callback's early stop saves last/ at its step, and the run resumes from it",
          "[train][train_api]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  train_quietly(tiny_spec(f, dir / "straight", 8));

  TrainCallbacks callbacks;
  int64_t stop_at = 0;
  SECTION("from a step") {
    stop_at = 3;
    callbacks.on_step = [&](const StepReport& s) { return s.step == stop_at ? RunControl::kStop : RunControl::kContinue; };
  }
  SECTION("from a validation") {
    stop_at = 4;
    callbacks.on_eval = [&](const ValidationReport&) { return RunControl::kStop; };
  }
  const TrainResult stopped = train_quietly(tiny_spec(f, dir / "run", 8), callbacks);
  CHECK(stopped.interrupted);
  CHECK(stopped.stopped_by_callback);
  CHECK(stopped.state.step == stop_at);
  CHECK(read_checkpoint(dir / "run/last").state.step == stop_at);

  const TrainResult resumed = run_training({dir / "run", [&] {
                                              const CheckpointInfo run = stored_run(dir / "run");
                                              TrainRequest request = resume_request(run, run.train);
                                              request.show_progress = false;
                                              return request;
                                            }});
  CHECK_FALSE(resumed.interrupted);
  CHECK(resumed.state.step == 8);
  CHECK(same_weights(dir / "straight/last", dir / "run/last"));
}

// Equal by construction: the same code on the same data with the same thread counts, LibTorch's and OpenBLAS's
// (whose split of a GEMM over its threads decides the order of the sums). The library sets OpenBLAS's pool to
// LibTorch's count as the CLI's --threads does; before it did, this process's OpenBLAS ran one thread per core and
// the bits differed on AVX2 machines wherever LibTorch's count was not the core count.
TEST_CASE("train API: a new run set up through the library writes lmzoo train's checkpoint", "[train][train_api][cli][equality]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  RunSpec spec = tiny_spec(f, dir / "api", 6);
  spec.train.eval_interval = 3;
  train_quietly(spec);
  if (openblas_get_num_threads) CHECK(openblas_get_num_threads() == torch::get_num_threads());

  write_text(dir / "model.json", nlohmann::json(spec.model).dump());
  const auto cli = run_cli("train --data " + f.data_dir + " --out " + dir / "cli" + " --config " + dir / "model.json" +
                           " --steps 6 --batch-size 4 --lr 0.003 --warmup 2 --eval-interval 3 --eval-iters 1"
                           " --log-interval 1 --device cpu --threads " + std::to_string(torch::get_num_threads()));
  INFO(cli.err);
  REQUIRE(cli.exit_code == 0);
  const CheckpointInfo api = read_checkpoint(dir / "api/last"), by_cli = read_checkpoint(dir / "cli/last");
  TrainConfig api_train = api.train;
  api_train.out_dir = by_cli.train.out_dir;
  CHECK(nlohmann::json(api_train) == nlohmann::json(by_cli.train));
  CHECK(nlohmann::json(api.model) == nlohmann::json(by_cli.model));
  CHECK(api.state.step == 6);
  CHECK(same_weights(dir / "api/last", dir / "cli/last"));
}
