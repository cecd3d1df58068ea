// End-to-end CLI tests of lmzoo generate's decoding flags: beam search and n-best on a tiny trained GPT,
// greedy / sampling / beams on a T5 checkpoint written through save_checkpoint, and flag validation.
#include "tests/catch_compat.h"

#include <filesystem>
#include <sstream>

#include "models/t5.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"
#include "tests/model_fixtures.h"
#include "train/checkpoint/checkpoint.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

std::vector<std::string> lines_of(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void check_generate_error(const CliResult& r, const std::string& expected_fragment) {
  INFO("stderr: " << r.err);
  CHECK(r.exit_code != 0);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.find(expected_fragment) != std::string::npos);
  CHECK(r.err.find("terminate") == std::string::npos);
}

}  // namespace

TEST_CASE("CLI: generate with beam search and n-best from a tiny GPT", "[cli][generate]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  const std::string run = dir / "run";
  auto train = run_cli("train --data " + f.data_dir + " --out " + run +
                       " --n-layer 2 --n-head 2 --d-model 32 --seq-len 16 --batch-size 4 --device cpu"
                       " --steps 20 --eval-interval 20 --eval-iters 1 --lr 3e-3 --warmup 2");
  INFO(train.err);
  REQUIRE(train.exit_code == 0);
  const std::string gen = "generate --checkpoint " + run + " --prompt 'The cat' --max-new-tokens 12 --device cpu ";

  auto beams = run_cli(gen + "--beams 3 --num-return 3");
  INFO(beams.err);
  REQUIRE(beams.exit_code == 0);
  const auto lines = lines_of(beams.out);
  REQUIRE(lines.size() == 3);  // one line per sequence, best first
  for (const auto& line : lines) CHECK(line.rfind("The cat", 0) == 0);
  CHECK(beams.err.find("beam 1: score") != std::string::npos);
  CHECK(beams.err.find("beam 3: score") != std::string::npos);
  CHECK(run_cli(gen + "--beams 3 --num-return 3").out == beams.out);  // deterministic
  auto best = run_cli(gen + "--beams 3");
  REQUIRE(best.exit_code == 0);
  CHECK(best.out == lines[0] + "\n");

  auto default_beams = run_cli(gen + "--beams --num-return 4");  // --beams alone: 4 beams
  INFO(default_beams.err);
  REQUIRE(default_beams.exit_code == 0);
  CHECK(lines_of(default_beams.out).size() == 4);
  CHECK(default_beams.err.find("beam 4: score") != std::string::npos);

  // One beam without length penalty is greedy decoding.
  auto greedy = run_cli(gen + "--temperature 0");
  auto one_beam = run_cli(gen + "--beams 1 --length-penalty 0");
  REQUIRE(greedy.exit_code == 0);
  REQUIRE(one_beam.exit_code == 0);
  CHECK(one_beam.out == greedy.out);
  CHECK(run_cli(gen + "--beams 2 --early-stopping --length-penalty 1.0").exit_code == 0);

  check_generate_error(run_cli(gen + "--beams 0"), "--beams must be >= 1");
  check_generate_error(run_cli(gen + "--beams 2 --num-return 3"), "--num-return must be between 1 and --beams (2)");
  check_generate_error(run_cli(gen + "--num-return 2"), "--num-return applies to beam search");
  check_generate_error(run_cli(gen + "--length-penalty 0.5"), "--length-penalty applies to beam search");
  check_generate_error(run_cli(gen + "--early-stopping"), "--early-stopping applies to beam search");
  check_generate_error(run_cli(gen + "--beams 2 --temperature 0.5"), "--temperature applies to sampling");
  check_generate_error(run_cli(gen + "--beams 2 --top-k 5"), "--top-k applies to sampling");
  check_generate_error(run_cli(gen + "--beams abc"), "--beams");
}

TEST_CASE("CLI: generate from a T5 checkpoint: greedy, sampling and beam search", "[cli][generate][t5]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  const std::string checkpoint = dir / "t5";
  {
    torch::manual_seed(11);
    CheckpointInfo info;
    info.model = tiny_t5_config(false, f.vocab_size);
    info.tokenizer_model = Tokenizer::load(f.tokenizer_dir).serialized();
    T5 model(info.model);
    save_checkpoint(checkpoint, model.ptr(), nullptr, info);
  }
  const std::string gen = "generate --checkpoint " + checkpoint + " --prompt 'The cat sat' --max-new-tokens 8 --device cpu ";

  auto beams = run_cli(gen + "--beams 3 --num-return 2");
  INFO(beams.err);
  REQUIRE(beams.exit_code == 0);
  CHECK(lines_of(beams.out).size() == 2);
  CHECK(beams.out.find("The cat sat") == std::string::npos);  // the prompt went to the encoder
  CHECK(beams.out.find("</s>") == std::string::npos);
  CHECK(beams.err.find("beam 2: score") != std::string::npos);

  auto greedy = run_cli(gen + "--temperature 0");
  INFO(greedy.err);
  REQUIRE(greedy.exit_code == 0);
  auto one_beam = run_cli(gen + "--beams 1 --length-penalty 0");
  REQUIRE(one_beam.exit_code == 0);
  CHECK(one_beam.out == greedy.out);
  // Sampling at a temperature near 0 is greedy (it ended in torch's "probability tensor contains inf or nan").
  auto cold = run_cli(gen + "--temperature 1e-45");
  INFO(cold.err);
  CHECK(cold.exit_code == 0);
  CHECK(cold.out == greedy.out);

  auto sampled = run_cli(gen + "--seed 5 --top-k 20");
  REQUIRE(sampled.exit_code == 0);
  CHECK(run_cli(gen + "--seed 5 --top-k 20").out == sampled.out);
  check_generate_error(run_cli(gen + "--beams 2 --num-return 5"), "--num-return");
}
