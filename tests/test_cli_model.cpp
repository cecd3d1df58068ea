// End-to-end CLI tests of the GPT journey: train -> eval -> generate -> export -> resume, and
// each subcommand's bad inputs (one clear line on stderr, non-zero exit).
#include "tests/catch_compat.h"

#include <filesystem>

#include "tests/cli_checks.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"

using namespace lmzoo::test;

namespace {
const std::string kTinyModel = " --n-layer 2 --n-head 2 --d-model 32 --seq-len 16 --batch-size 4 --device cpu ";

}  // namespace

TEST_CASE("CLI: train, eval, generate, export and resume a tiny GPT", "[cli][e2e]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  const std::string run = dir / "run";
  auto train = run_cli("train --data " + f.data_dir + " --out " + run + kTinyModel +
                       "--steps 30 --eval-interval 15 --eval-iters 2 --lr 3e-3 --warmup 3");
  INFO(train.err);
  REQUIRE(train.exit_code == 0);
  for (const char* file : {"best/config.json", "best/model.pt", "last/optimizer.pt", "last/trainer_state.json",
                           "last/tokenizer.model", "last/rng.pt", "metrics.jsonl"}) {
    CHECK(std::filesystem::exists(run + "/" + file));
  }
  CHECK(train.err.find("step 30/30") != std::string::npos);  // plain progress lines off a terminal
  CHECK(last_json_line(train.out)["step"] == 30);

  auto eval = run_cli("eval --checkpoint " + run + " --data " + f.data_dir + " --device cpu");
  REQUIRE(eval.exit_code == 0);
  auto metrics = last_json_line(eval.out);
  CHECK(metrics["tokens"].get<int64_t>() > 100);
  CHECK(metrics["ppl"].get<double>() == Approx(std::exp(metrics["nll"].get<double>())));
  CHECK(metrics["ppl"].get<double>() < f.vocab_size);  // better than uniform after training
  auto eval_text = run_cli("eval --checkpoint " + run + " --text " + f.text_file + " --stride 8 --device cpu");
  REQUIRE(eval_text.exit_code == 0);
  CHECK(last_json_line(eval_text.out)["bpb"].get<double>() > 0);

  auto gen = run_cli("generate --checkpoint " + run + " --prompt 'The cat' --max-new-tokens 20 --seed 3");
  REQUIRE(gen.exit_code == 0);
  CHECK(gen.out.rfind("The cat", 0) == 0);
  auto gen_again = run_cli("generate --checkpoint " + run + " --prompt 'The cat' --max-new-tokens 20 --seed 3");
  CHECK(gen_again.out == gen.out);  // seeded sampling is reproducible

  auto exported = run_cli("export --checkpoint " + run + " --out " + (dir / "model.pt"));
  REQUIRE(exported.exit_code == 0);
  CHECK(std::filesystem::exists(dir / "model.pt"));

  auto resume = run_cli("train --resume " + run + " --steps 40");
  INFO(resume.err);
  REQUIRE(resume.exit_code == 0);
  CHECK(last_json_line(resume.out)["step"] == 40);
  CHECK(resume.err.find("steps 30 -> 40") != std::string::npos);
}

TEST_CASE("CLI: bad inputs give one clear line and a non-zero exit", "[cli][errors]") {
  const Fixture& f = tiny_corpus("char");
  const Fixture& other = tiny_corpus("bpe");
  TempDir dir;
  const std::string run = dir / "run";
  REQUIRE(run_cli("train --data " + f.data_dir + " --out " + run + kTinyModel + "--steps 2 --eval-interval 2 --eval-iters 1")
              .exit_code == 0);

  check_user_error(run_cli("train --data " + dir / "missing" + " --out " + dir / "x"), "missing");
  check_user_error(run_cli("train --data " + f.data_dir + " --out " + dir / "x" + " --preset gpt5"),
                   "unknown preset 'gpt5'");
  write_text(dir / "bad.json", "{\"n_layer\": 2,");
  check_user_error(run_cli("train --data " + f.data_dir + " --out " + dir / "x" + " --config " + dir / "bad.json"),
                   "not valid JSON");
  write_text(dir / "unknown.json", "{\"n_layers\": 2}");
  check_user_error(run_cli("train --data " + f.data_dir + " --out " + dir / "x" + " --config " + dir / "unknown.json"),
                   "unknown field 'n_layers'");
  check_user_error(run_cli("train --data " + f.data_dir + " --out " + dir / "x" + " --lr -1"), "lr");
  check_user_error(run_cli("train --data " + f.data_dir + " --out " + dir / "x" + " --steps abc"), "steps");
  check_user_error(run_cli("train --data " + f.data_dir + " --out " + run), "already holds a run");
  check_user_error(run_cli("train --data " + f.data_dir + " --out " + dir / "x" + " --device cuda:3"), "cuda");
  check_user_error(run_cli("eval --checkpoint " + dir / "nope" + " --data " + f.data_dir), "does not exist");
  check_user_error(run_cli("eval --checkpoint " + run + " --data " + other.data_dir), "different tokenizer");
  check_user_error(run_cli("eval --checkpoint " + run + " --text " + dir / "missing.txt"), "missing.txt");
  check_user_error(run_cli("eval --checkpoint " + run), "exactly one of --data or --text");
  check_user_error(run_cli("generate --checkpoint " + run + " --prompt hi --top-p 0"), "--top-p");
  check_user_error(run_cli("generate --checkpoint " + run), "--prompt is required");
  check_user_error(run_cli("export --checkpoint " + run + " --out " + dir / "no/such/dir/m.pt"), "cannot write");
  check_user_error(run_cli("train --resume " + dir / "nope"), "no last/ checkpoint");
  check_user_error(run_cli("presets --show gpt5"), "unknown preset");
  check_user_error(run_cli("frobnicate"), "unknown command");
  // The same ASCII quoting whatever cxxopts release parsed the flags (3.1 prints typographic quotes).
  check_user_error(run_cli("eval --frobnicate 3"), "'frobnicate'");

  write_text(run + "/last/model.pt", "garbage");
  check_user_error(run_cli("generate --checkpoint " + run + "/last --prompt hi"), "corrupt");
}

TEST_CASE("CLI: presets lists GPT-2 with its published parameter count", "[cli][presets]") {
  auto r = run_cli("presets");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("124439808") != std::string::npos);
  auto shown = run_cli("presets --show gpt2");
  REQUIRE(shown.exit_code == 0);
  CHECK(nlohmann::json::parse(shown.out)["n_layer"] == 12);
}

TEST_CASE("CLI: bench times training steps and reports consistent figures", "[cli][bench]") {
  const Fixture& f = tiny_corpus("char");
  auto r = run_cli("bench --data " + f.data_dir + " --steps 5 --skip 2 --batch-size 2 --threads 1 --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto j = last_json_line(r.out);
  CHECK(j["iters_timed"] == 3);
  CHECK(j["threads"] == 1);
  const double median = j["ms_per_iter_median"], fastest = j["ms_per_iter_min"];
  CHECK(fastest > 0.0);
  CHECK(fastest <= median);
  // gpt-nano's context is 64 tokens: tokens/s is 2 * 64 tokens over the median step.
  CHECK(j["tokens_per_s"].get<double>() == Approx(2 * 64 / (median / 1e3)).epsilon(1e-9));
  CHECK(j["mfu"].get<double>() == Approx(j["model_gflops_per_s"].get<double>() / j["peak_gemm_gflops"].get<double>()));

  // Any family's preset, with its default objective and a shorter context.
  const Fixture& bpe = tiny_corpus("bpe");
  for (const auto& [preset, objective] : {std::pair<std::string, std::string>{"bert-tiny", "mlm"}, {"t5-small", "span"}}) {
    auto b = run_cli("bench --data " + bpe.data_dir + " --preset " + preset +
                     " --seq-len 32 --steps 3 --skip 1 --batch-size 2 --threads 1 --json");
    INFO(preset << ": " << b.err);
    REQUIRE(b.exit_code == 0);
    auto jb = last_json_line(b.out);
    CHECK(jb["objective"] == objective);
    CHECK(jb["tokens_per_s"].get<double>() == Approx(2 * 32 / (jb["ms_per_iter_median"].get<double>() / 1e3)));
    CHECK(jb["mfu"].get<double>() > 0.0);
  }

  check_user_error(run_cli("bench --data " + f.data_dir + " --steps 2 --skip 5"), "--steps must be larger than --skip");
  check_user_error(run_cli("bench --steps 5 --skip 1"), "give --data or --vocab-size");
}
