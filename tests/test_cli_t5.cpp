// End-to-end CLI tests of the T5 journey: prepare --pairs, train --arch t5 (span corruption, seq2seq on
// pairs, resume), gpt --objective prefix, eval (target perplexity on shards, prepared pairs and a pairs
// file), and the bad inputs of these paths (one clear stderr line, non-zero exit).
#include "tests/catch_compat.h"

#include "tests/cli_helpers.h"
#include "tests/fixtures.h"

using namespace lmzoo::test;

namespace {
const std::string kTinyT5 =
    " --arch t5 --n-layer 2 --n-head 4 --d-model 32 --seq-len 24 --device cpu --batch-size 8 --warmup 2 ";

void check_user_error(const CliResult& r, const std::string& expected_fragment) {
  INFO("stderr: " << r.err);
  CHECK(r.exit_code != 0);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.find(expected_fragment) != std::string::npos);
  CHECK(r.err.find("terminate") == std::string::npos);
}

nlohmann::json last_json_line(const std::string& out) {
  auto end = out.find_last_not_of('\n');
  auto start = out.rfind('\n', end);
  return nlohmann::json::parse(out.substr(start == std::string::npos ? 0 : start + 1, end - start));
}

std::string reverse_pairs_jsonl(int n) {
  const std::vector<std::string> words = {"cat", "dog", "bird", "tree"};
  std::string out;
  for (int i = 0; i < n; ++i) {
    const std::string a = words[i % 4], b = words[(i / 4) % 4], c = words[(i / 16) % 4];
    out += nlohmann::json{{"input", a + " " + b + " " + c}, {"target", c + " " + b + " " + a}}.dump() + "\n";
  }
  return out;
}
}  // namespace

TEST_CASE("CLI: prepare pairs, train t5 span and seq2seq, resume, evaluate", "[cli][e2e][t5]") {
  const Fixture& f = tiny_corpus("bpe");
  TempDir dir;
  write_text(dir / "pairs.jsonl", reverse_pairs_jsonl(64));
  auto prep = run_cli("prepare --pairs " + dir / "pairs.jsonl" + " --tokenizer " + f.tokenizer_dir + " --out " +
                      dir / "pairs" + " --val-fraction 0.125 --max-input-len 16 --max-target-len 16");
  INFO(prep.err);
  REQUIRE(prep.exit_code == 0);
  CHECK(prep.out.find("train 56 pairs, val 8 pairs") != std::string::npos);
  auto manifest = nlohmann::json::parse(read_text(dir / "pairs/manifest.json"));
  CHECK(manifest["kind"] == "pairs");
  CHECK(manifest["examples"]["val"]["examples"] == 8);

  // Span corruption is the default objective of t5 on token shards; --n-layer sets both stacks.
  auto span = run_cli("train --data " + f.data_dir + " --out " + dir / "span" + kTinyT5 +
                      "--steps 12 --eval-interval 6 --eval-iters 2 --noise-density 0.2 --mean-span-length 2");
  INFO(span.err);
  REQUIRE(span.exit_code == 0);
  auto config = nlohmann::json::parse(read_text(dir / "span/last/config.json"));
  CHECK(config["model"]["arch"] == "t5");
  CHECK(config["model"]["n_layer"] == 2);
  CHECK(config["model"]["n_decoder_layer"] == 0);
  CHECK(config["model"]["d_ff"] == 0);
  CHECK(config["train"]["objective"] == "span");
  CHECK(config["train"]["noise_density"] == 0.2);
  CHECK(std::isfinite(last_json_line(span.out)["val_loss"].get<double>()));
  auto resume = run_cli("train --resume " + dir / "span" + " --steps 14");
  INFO(resume.err);
  REQUIRE(resume.exit_code == 0);
  CHECK(last_json_line(resume.out)["step"] == 14);

  auto eval_span = run_cli("eval --checkpoint " + dir / "span" + " --data " + f.data_dir + " --batches 2 --device cpu");
  INFO(eval_span.err);
  REQUIRE(eval_span.exit_code == 0);
  auto m = last_json_line(eval_span.out);
  CHECK(m["tokens"].get<int64_t>() > 0);
  CHECK(m["bpb"].is_null());
  CHECK(m["ppl"].get<double>() == Approx(std::exp(m["nll"].get<double>())));

  // seq2seq is the default on prepared pairs; an asymmetric model with --n-decoder-layer.
  auto s2s = run_cli("train --data " + dir / "pairs" + " --out " + dir / "s2s" + kTinyT5 +
                     "--n-decoder-layer 1 --steps 10 --eval-interval 5");
  INFO(s2s.err);
  REQUIRE(s2s.exit_code == 0);
  config = nlohmann::json::parse(read_text(dir / "s2s/last/config.json"));
  CHECK(config["train"]["objective"] == "seq2seq");
  CHECK(config["model"]["n_decoder_layer"] == 1);
  const double val_loss = last_json_line(s2s.out)["val_loss"].get<double>();

  auto eval_pairs = run_cli("eval --checkpoint " + dir / "s2s/last" + " --data " + dir / "pairs" + " --device cpu");
  INFO(eval_pairs.err);
  REQUIRE(eval_pairs.exit_code == 0);
  m = last_json_line(eval_pairs.out);
  CHECK(m["nll"].get<double>() == Approx(val_loss).margin(0.3));  // token- vs row-weighted mean
  auto eval_file = run_cli("eval --checkpoint " + dir / "s2s" + " --pairs " + dir / "pairs.jsonl" + " --device cpu");
  INFO(eval_file.err);
  REQUIRE(eval_file.exit_code == 0);
  CHECK(last_json_line(eval_file.out)["tokens"].get<int64_t>() > m["tokens"].get<int64_t>());

  // GPT prefix-LM.
  auto prefix = run_cli("train --data " + f.data_dir + " --out " + dir / "gpt" +
                        " --objective prefix --n-layer 1 --d-model 32 --n-head 2 --seq-len 16 --steps 4 "
                        "--eval-interval 4 --eval-iters 1 --device cpu");
  INFO(prefix.err);
  REQUIRE(prefix.exit_code == 0);
  CHECK(nlohmann::json::parse(read_text(dir / "gpt/last/config.json"))["train"]["objective"] == "prefix");

  // Bad inputs.
  check_user_error(run_cli("train --data " + f.data_dir + " --out " + dir / "x" + " --objective span --device cpu"),
                   "objective 'span' trains t5, not a 'gpt'");
  check_user_error(run_cli("train --data " + f.data_dir + " --out " + dir / "x" + kTinyT5 + "--objective seq2seq"),
                   "holds no prepared pairs");
  check_user_error(run_cli("train --data " + dir / "pairs" + " --out " + dir / "x" + kTinyT5 + "--objective span"),
                   "holds prepared pairs");
  check_user_error(run_cli("train --data " + f.data_dir + " --out " + dir / "x" + " --n-decoder-layer 2"),
                   "--n-decoder-layer is for --arch t5");
  check_user_error(run_cli("train --data " + f.data_dir + " --out " + dir / "x" + kTinyT5 + "--noise-density 1.5"),
                   "noise_density");
  check_user_error(run_cli("train --data " + f.data_dir + " --out " + dir / "x" + " --objective bogus"),
                   "--objective bogus is not one of causal|mlm|classify|span|prefix|seq2seq");
  write_text(dir / "bad.tsv", "one\ttwo\nno tab\n");
  check_user_error(run_cli("prepare --pairs " + dir / "bad.tsv" + " --tokenizer " + f.tokenizer_dir + " --out " +
                           dir / "badpairs"),
                   "bad.tsv:2: expected input<TAB>target");
  check_user_error(run_cli("prepare --pairs " + dir / "bad.tsv" + " --input " + f.text_file + " --tokenizer " +
                           f.tokenizer_dir + " --out " + dir / "badpairs"),
                   "not more");
  check_user_error(run_cli("eval --checkpoint " + dir / "s2s" + " --text " + f.text_file), "a t5 model is evaluated");
  check_user_error(run_cli("eval --checkpoint " + dir / "s2s" + " --pairs " + dir / "bad.tsv"), "bad.tsv:2");
}
