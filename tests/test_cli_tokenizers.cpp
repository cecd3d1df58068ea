// End-to-end CLI runs on Hugging Face tokenizers: prepare a corpus with a WordPiece vocab.txt and with GPT-2's real
// vocabulary, train a few steps, evaluate and generate; objectives a tokenizer cannot serve fail in one line.
#include "tests/catch_compat.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "tests/cli_checks.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"
#include "tests/tokenizer_kinds_fixtures.h"

using namespace lmzoo;
using namespace lmzoo::test;
namespace fs = std::filesystem;

namespace {
const std::string kTinyRun = " --n-layer 1 --n-head 2 --d-model 16 --seq-len 16 --batch-size 4 --eval-iters 1 "
                             "--warmup 1 --device cpu --steps 2 --eval-interval 2 ";

// lmzoo prepare --tokenizer TOKENIZER over the English-like test text into DIR/data; returns that directory.
std::string prepare_with(const TempDir& dir, const std::string& tokenizer) {
  write_text(dir / "corpus.txt", english_like_text(12000, 3));
  const std::string data = dir / "data";
  auto prep = run_cli("prepare --tokenizer " + tokenizer + " --input " + dir / "corpus.txt" + " --out " + data);
  INFO(prep.err);
  REQUIRE(prep.exit_code == 0);
  return data;
}
}  // namespace

TEST_CASE("CLI: a WordPiece vocab.txt prepares, trains a bert, evaluates and fills masks", "[cli][tokenizers]") {
  TempDir dir;
  fs::create_directories(dir.path / "bert");
  write_bert_vocab(dir.path / "bert", /*cased=*/false);
  const std::string data = prepare_with(dir, dir / "bert");
  CHECK(fs::exists(data + "/vocab.txt"));
  CHECK_FALSE(fs::exists(data + "/tokenizer.model"));

  auto train = run_cli("train --arch bert --data " + data + " --out " + dir / "run" + kTinyRun);
  INFO(train.err);
  REQUIRE(train.exit_code == 0);
  CHECK(fs::exists(dir / "run/last/vocab.txt"));
  auto eval = run_cli("eval --checkpoint " + dir / "run" + " --data " + data + " --device cpu");
  INFO(eval.err);
  REQUIRE(eval.exit_code == 0);
  CHECK(last_json_line(eval.out)["tokens"].get<int64_t>() > 0);
  auto fill = run_cli("generate --checkpoint " + dir / "run" + " --prompt 'the [MASK] sat' --top-k 2");
  INFO(fill.err);
  REQUIRE(fill.exit_code == 0);
  CHECK(fill.out.find("[MASK] 1:") == 0);

  check_user_error(run_cli("train --arch t5 --data " + data + " --out " + dir / "t5" + kTinyRun),
                   "objective span needs sentinel tokens (<extra_id_0> ...); the wordpiece tokenizer has none");
}

TEST_CASE("CLI: GPT-2's vocabulary prepares, trains a gpt, evaluates and generates", "[cli][tokenizers]") {
  const std::string vocab = gpt2_vocab_dir();
  if (vocab.empty()) {
    WARN("GPT-2 vocabulary not fetched (tools/fetch_gpt2_vocab.sh): skipped");
    return;
  }
  TempDir dir;
  const std::string data = prepare_with(dir, vocab);
  CHECK(nlohmann::json::parse(read_text(data + "/manifest.json"))["vocab_size"] == 50257);

  auto train = run_cli("train --data " + data + " --out " + dir / "run" + kTinyRun);
  INFO(train.err);
  REQUIRE(train.exit_code == 0);
  CHECK(fs::exists(dir / "run/last/encoder.json"));
  CHECK(fs::exists(dir / "run/last/vocab.bpe"));
  auto eval = run_cli("eval --checkpoint " + dir / "run" + " --data " + data + " --device cpu");
  INFO(eval.err);
  REQUIRE(eval.exit_code == 0);
  CHECK(std::isfinite(last_json_line(eval.out)["ppl"].get<double>()));
  auto gen = run_cli("generate --checkpoint " + dir / "run" + " --prompt 'The cat' --max-new-tokens 4 --seed 1");
  INFO(gen.err);
  REQUIRE(gen.exit_code == 0);
  CHECK(gen.out.rfind("The cat", 0) == 0);

  check_user_error(run_cli("train --arch bert --data " + data + " --out " + dir / "bert" + kTinyRun),
                   "objective mlm needs a [MASK] token; the gpt2-bpe tokenizer has none");
}
