// End-to-end CLI tests of the BERT journey: masked-LM pretraining -> classification fine-tuning ->
// eval (accuracy) -> generate (label), resume, presets, and the bad inputs of these paths.
#include "tests/catch_compat.h"

#include <cmath>
#include <filesystem>
#include <random>

#include "tests/cli_checks.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"

using namespace lmzoo::test;

namespace {
const std::string kTinyBert = " --arch bert --n-layer 2 --n-head 2 --d-model 32 --seq-len 24 --device cpu ";

// Sentiment-like toy data in JSONL: "good" words versus "bad" words, trivially separable.
std::string toy_jsonl(int n, uint32_t seed) {
  const std::vector<std::string> good = {"cat", "bird", "friend"}, bad = {"river", "house", "tree"};
  std::mt19937 rng(seed);
  std::string out;
  for (int i = 0; i < n; ++i) {
    const auto& words = i % 2 ? good : bad;
    std::string text = "the";
    for (int w = 0; w < 4; ++w) text += " " + words[rng() % words.size()];
    out += nlohmann::json{{"text", text}, {"label", i % 2 ? "good" : "bad"}}.dump() + "\n";
  }
  return out;
}
}  // namespace

TEST_CASE("CLI: pretrain a tiny BERT, fine-tune a classifier, evaluate and label text", "[cli][e2e][bert]") {
  const Fixture& f = tiny_corpus("bpe");
  TempDir dir;
  const std::string base = dir / "base", clf = dir / "clf";
  auto train = run_cli("train --data " + f.data_dir + " --out " + base + kTinyBert +
                       "--steps 20 --batch-size 8 --eval-interval 10 --eval-iters 2 --lr 3e-3 --warmup 2");
  INFO(train.err);
  REQUIRE(train.exit_code == 0);
  auto config = nlohmann::json::parse(read_text(base + "/last/config.json"));
  CHECK(config["model"]["arch"] == "bert");
  CHECK(config["train"]["objective"] == "mlm");
  CHECK(std::isfinite(last_json_line(train.out)["val_loss"].get<double>()));

  auto masked = run_cli("eval --checkpoint " + base + " --data " + f.data_dir + " --device cpu");
  INFO(masked.err);
  REQUIRE(masked.exit_code == 0);
  auto masked_metrics = last_json_line(masked.out);
  CHECK(masked_metrics["ppl"].get<double>() == Approx(std::exp(masked_metrics["nll"].get<double>())));
  CHECK(masked_metrics["ppl"].get<double>() < f.vocab_size);
  auto pseudo = run_cli("eval --checkpoint " + base + " --text " + f.text_file + " --pseudo --batch-size 64");
  REQUIRE(pseudo.exit_code == 0);
  CHECK(last_json_line(pseudo.out)["tokens"].get<int64_t>() > last_json_line(masked.out)["tokens"].get<int64_t>());

  auto fill = run_cli("generate --checkpoint " + base + " --prompt 'the [MASK] sat on the [MASK]' --top-k 3");
  INFO(fill.err);
  REQUIRE(fill.exit_code == 0);
  CHECK(fill.out.find("[MASK] 1:") == 0);
  CHECK(fill.out.find("[MASK] 2:") != std::string::npos);
  CHECK(count_lines(fill.out) == 3);                                      // two masks, then the filled text
  CHECK(fill.out.substr(fill.out.rfind('\n', fill.out.size() - 2)).find("[MASK]") == std::string::npos);

  auto resume = run_cli("train --resume " + base + " --steps 24");
  INFO(resume.err);
  REQUIRE(resume.exit_code == 0);
  CHECK(last_json_line(resume.out)["step"] == 24);

  write_text(dir / "train.jsonl", toy_jsonl(48, 1));
  write_text(dir / "dev.jsonl", toy_jsonl(16, 2));
  auto tune = run_cli("train --init " + base + " --data " + dir / "train.jsonl" + " --val-data " + dir / "dev.jsonl" +
                      " --out " + clf + " --steps 40 --batch-size 16 --lr 2e-3 --eval-interval 20 --device cpu");
  INFO(tune.err);
  REQUIRE(tune.exit_code == 0);
  auto tuned = nlohmann::json::parse(read_text(clf + "/best/config.json"));
  CHECK(tuned["train"]["objective"] == "classify");
  CHECK(tuned["model"]["labels"] == nlohmann::json({"bad", "good"}));

  auto eval = run_cli("eval --checkpoint " + clf + " --data " + dir / "dev.jsonl" + " --device cpu");
  INFO(eval.err);
  REQUIRE(eval.exit_code == 0);
  auto metrics = last_json_line(eval.out);
  CHECK(metrics["examples"] == 16);
  CHECK(metrics["accuracy"].get<double>() == 1.0);
  CHECK(metrics["macro_f1"].get<double>() == 1.0);

  auto label = run_cli("generate --checkpoint " + clf + " --prompt 'the friend cat bird'");
  REQUIRE(label.exit_code == 0);
  CHECK(label.out.rfind("good\t", 0) == 0);
  auto both = run_cli("generate --checkpoint " + clf + " --prompt 'the river tree' --top-k 2");
  REQUIRE(count_lines(both.out) == 2);
  CHECK(both.out.rfind("bad\t", 0) == 0);

  auto exported = run_cli("export --checkpoint " + clf + " --out " + dir / "clf.pt");
  INFO(exported.err);
  REQUIRE(exported.exit_code == 0);
  CHECK(exported.out.find("class logits (B, 2)") != std::string::npos);
  CHECK(std::filesystem::exists(dir / "clf.pt"));
  auto exported_base = run_cli("export --checkpoint " + base + " --out " + dir / "base.pt");
  REQUIRE(exported_base.exit_code == 0);
  CHECK(exported_base.out.find("encode(") != std::string::npos);

  check_user_error(run_cli("generate --checkpoint " + base + " --prompt 'no mask here'"), "[MASK]");
  check_user_error(run_cli("train --objective classify --data " + dir / "train.jsonl" + " --out " + dir / "x"),
                   "--init is required");
  check_user_error(run_cli("train --init " + base + " --data " + dir / "train.jsonl" + " --out " + dir / "x" +
                           " --d-model 64"), "cannot change the shape");
  write_text(dir / "other.jsonl", "{\"text\": \"x\", \"label\": \"neutral\"}\n");
  check_user_error(run_cli("eval --checkpoint " + clf + " --data " + dir / "other.jsonl"), "'neutral'");
  check_user_error(run_cli("train --data " + f.data_dir + " --out " + dir / "x" + " --arch bert --objective causal"),
                   "objective 'causal' trains gpt");
  check_user_error(run_cli("train --data " + f.data_dir + " --out " + dir / "x" + " --arch t9"), "--arch t9");
}

TEST_CASE("CLI: presets lists BERT shapes with the published bert-base count", "[cli][presets][bert]") {
  auto r = run_cli("presets");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("bert-base") != std::string::npos);
  CHECK(r.out.find("109482240") != std::string::npos);
  auto shown = run_cli("presets --show bert-large");
  REQUIRE(shown.exit_code == 0);
  CHECK(nlohmann::json::parse(shown.out)["n_layer"] == 24);
}
