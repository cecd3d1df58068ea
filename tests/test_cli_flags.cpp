// CLI tests: flags that would do nothing for the checkpoint's architecture or the run's objective are
// refused with one clear stderr line and a non-zero exit (train, eval, generate), never silently ignored.
#include "tests/catch_compat.h"

#include "tests/cli_checks.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"

using namespace lmzoo::test;

namespace {
const std::string kTiny = " --n-layer 1 --n-head 2 --d-model 32 --seq-len 16 --device cpu --batch-size 4 --warmup 1 "
                          "--eval-interval 2 --steps 2 ";

void require_ok(const CliResult& r) {
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
}
}  // namespace

TEST_CASE("CLI: flags of another arch or objective are refused, not ignored", "[cli][flags]") {
  const Fixture& f = tiny_corpus("bpe");
  TempDir dir;
  const std::string gpt = dir / "gpt", bert = dir / "bert", clf = dir / "clf", t5 = dir / "t5";
  write_text(dir / "pairs.tsv", "cat dog\tdog cat\nbird tree\ttree bird\ncat cat\tcat cat\ndog bird\tbird dog\n");
  write_text(dir / "labels.tsv", "the cat\ta\nthe dog\tb\nthe bird\ta\nthe tree\tb\n");
  require_ok(run_cli("prepare --pairs " + dir / "pairs.tsv" + " --tokenizer " + f.tokenizer_dir + " --out " +
                     dir / "pairs" + " --val-fraction 0.25"));
  require_ok(run_cli("train --data " + f.data_dir + " --out " + gpt + kTiny + "--eval-iters 1"));
  require_ok(run_cli("train --arch bert --data " + f.data_dir + " --out " + bert + kTiny + "--eval-iters 1"));
  require_ok(run_cli("train --init " + bert + " --data " + dir / "labels.tsv" + " --out " + clf +
                     " --steps 2 --batch-size 2 --device cpu"));
  require_ok(run_cli("train --arch t5 --data " + dir / "pairs" + " --out " + t5 + kTiny));

  {  // train: span flags need --objective span, masking flags --objective mlm (new runs and resumes)
    const std::string gpt_run = "train --data " + f.data_dir + " --out " + dir / "x" + kTiny;
    check_user_error(run_cli(gpt_run + "--noise-density 0.3"),
                     "--noise-density applies to --objective span (t5 span corruption), not to causal");
    check_user_error(run_cli(gpt_run + "--objective prefix --mean-span-length 2"),
                     "--mean-span-length applies to --objective span");
    check_user_error(run_cli(gpt_run + "--whole-word-mask"), "--whole-word-mask applies to --objective mlm");
    check_user_error(run_cli(gpt_run + "--arch bert --noise-density 0.3"), "not to mlm");
    check_user_error(run_cli(gpt_run + "--arch t5 --mask-rate 0.5"), "--mask-rate applies to --objective mlm");
    check_user_error(run_cli("train --data " + dir / "pairs" + " --out " + dir / "x" + kTiny +
                             "--arch t5 --noise-density 0.3"),
                     "not to seq2seq");
    check_user_error(run_cli("train --init " + bert + " --data " + dir / "labels.tsv" + " --out " + dir / "x" +
                             " --segment-pairs"),
                     "--segment-pairs applies to --objective mlm (bert masked LM), not to classify");
    check_user_error(run_cli("train --resume " + gpt + " --steps 4 --mlm-probability 0.2"), "not to causal");
    check_user_error(run_cli("train --resume " + t5 + " --steps 4 --eval-iters 3"),
                     "--eval-iters does not apply to --objective seq2seq");
    check_user_error(run_cli("train --init " + bert + " --data " + dir / "labels.tsv" + " --out " + dir / "x" +
                             " --eval-iters 2"),
                     "--eval-iters does not apply to --objective classify");
    check_user_error(run_cli("train --resume " + bert + " --steps 4 --noise-density 0.2"), "not to mlm");
    CHECK(!std::filesystem::exists(dir / "x"));
    // bf16 masked-LM training runs on CPU (the MLM head's LayerNorm takes its bf16 input in fp32).
    require_ok(run_cli("train --arch bert --data " + f.data_dir + " --out " + dir / "bf16" + kTiny +
                       "--precision bf16"));
    // The objective's own flags still pass (on resume, repeating the run's value).
    require_ok(run_cli("train --resume " + bert + " --steps 3 --mask-rate 0.8"));
  }

  {  // eval: --pairs, --batches, --stride, --pseudo, --seed and --split only where they apply
    const std::string on_data = " --data " + f.data_dir + " --device cpu";
    check_user_error(run_cli("eval --checkpoint " + gpt + " --pairs " + dir / "pairs.tsv"),
                     "--pairs applies to t5 checkpoints");
    check_user_error(run_cli("eval --checkpoint " + gpt + on_data + " --pairs " + dir / "pairs.tsv"),
                     "holds a gpt model");
    check_user_error(run_cli("eval --checkpoint " + bert + on_data + " --pairs " + dir / "pairs.tsv"),
                     "holds a bert model");
    check_user_error(run_cli("eval --checkpoint " + gpt + on_data + " --batches 3"), "--batches applies to t5");
    check_user_error(run_cli("eval --checkpoint " + gpt + on_data + " --pseudo"), "--pseudo applies to bert");
    check_user_error(run_cli("eval --checkpoint " + gpt + on_data + " --seed 3"), "--seed applies to bert");
    check_user_error(run_cli("eval --checkpoint " + gpt + " --text " + f.text_file + " --split train"),
                     "--split applies to --data, not to --text");
    check_user_error(run_cli("eval --checkpoint " + bert + on_data + " --stride 4"), "--stride applies to gpt");
    check_user_error(run_cli("eval --checkpoint " + bert + on_data + " --pseudo --seed 3"),
                     "--pseudo masks every token in turn");
    check_user_error(run_cli("eval --checkpoint " + clf + " --data " + dir / "labels.tsv" + " --pseudo"),
                     "holds a bert-classifier model");
    check_user_error(run_cli("eval --checkpoint " + clf + " --data " + dir / "labels.tsv" + " --split train"),
                     "--split applies to prepared data directories");
    check_user_error(run_cli("eval --checkpoint " + t5 + " --pairs " + dir / "pairs.tsv" + " --stride 4"),
                     "holds a t5 model");
    check_user_error(run_cli("eval --checkpoint " + t5 + " --pairs " + dir / "pairs.tsv" + " --batches 3"),
                     "--batches applies to a t5 evaluated on token shards");
    check_user_error(run_cli("eval --checkpoint " + t5 + " --data " + dir / "pairs" + " --seed 3"),
                     "--seed applies to a t5 evaluated on token shards");
    check_user_error(run_cli("eval --checkpoint " + t5 + " --pairs " + dir / "pairs.tsv" + " --split train"),
                     "--split applies to --data, not to --pairs");
    check_user_error(run_cli("eval --checkpoint " + gpt + on_data + " --precision fp16"),
                     "--precision must be fp32 or bf16");
    // Where they apply, the same flags are accepted.
    require_ok(run_cli("eval --checkpoint " + clf + " --data " + dir / "labels.tsv" + " --precision bf16"));
    require_ok(run_cli("eval --checkpoint " + t5 + " --data " + f.data_dir + " --batches 1 --seed 3"));
    require_ok(run_cli("eval --checkpoint " + bert + on_data + " --seed 3"));
    require_ok(run_cli("eval --checkpoint " + bert + on_data + " --precision bf16"));
    require_ok(run_cli("eval --checkpoint " + gpt + on_data + " --stride 4"));
  }

  {  // generate: sampling and beam flags on bert, --prompt-pair off a classifier
    const std::string fill = "generate --checkpoint " + bert + " --prompt 'the [MASK] sat' ";
    check_user_error(run_cli(fill + "--beams 2"), "--beams applies to gpt and t5 checkpoints");
    check_user_error(run_cli(fill + "--temperature 0.5"), "--temperature applies to gpt and t5 generation");
    check_user_error(run_cli(fill + "--top-p 0.9"), "--top-p applies to gpt and t5");
    check_user_error(run_cli(fill + "--max-new-tokens 3"), "holds a bert model");
    check_user_error(run_cli(fill + "--prompt-pair 'a dog'"), "--prompt-pair applies to bert classifier");
    const std::string label = "generate --checkpoint " + clf + " --prompt 'the cat' ";
    check_user_error(run_cli(label + "--beams"), "holds a bert-classifier model");
    check_user_error(run_cli(label + "--seed 4"), "--seed applies to gpt and t5 generation");
    check_user_error(run_cli("generate --checkpoint " + gpt + " --prompt 'the' --prompt-pair x"),
                     "--prompt-pair applies to bert classifier checkpoints");
    check_user_error(run_cli("generate --checkpoint " + t5 + " --prompt 'cat' --beams 2 --seed 3"),
                     "--seed applies to sampling, not to beam search");
    require_ok(run_cli(fill + "--top-k 2"));
    require_ok(run_cli(label + "--prompt-pair 'a dog' --top-k 2"));
  }
}
