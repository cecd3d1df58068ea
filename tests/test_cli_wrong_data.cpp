// CLI tests: data of the wrong kind (a labelled file where token shards are expected, a directory where a
// labelled file is expected, prepared pairs given to a gpt or bert) is named in one clear stderr line.
#include "tests/catch_compat.h"

#include "tests/cli_checks.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"

using namespace lmzoo::test;

TEST_CASE("CLI: data of the wrong kind is named in one clear line", "[cli][data]") {
  const Fixture& f = tiny_corpus("bpe");
  TempDir dir;
  const std::string tiny = " --n-layer 1 --n-head 2 --d-model 32 --seq-len 16 --device cpu --batch-size 4 --steps 1 "
                           "--eval-interval 1 --eval-iters 1 ";
  write_text(dir / "labels.tsv", "the cat\ta\nthe dog\tb\n");
  write_text(dir / "pairs.tsv", "cat dog\tdog cat\nbird tree\ttree bird\n");
  auto prep = run_cli("prepare --pairs " + dir / "pairs.tsv" + " --tokenizer " + f.tokenizer_dir + " --out " +
                      dir / "pairs" + " --val-fraction 0.5");
  INFO(prep.err);
  REQUIRE(prep.exit_code == 0);
  auto bert = run_cli("train --arch bert --data " + f.data_dir + " --out " + dir / "bert" + tiny);
  INFO(bert.err);
  REQUIRE(bert.exit_code == 0);

  // Forgetting --init: a labelled file is not a prepared data directory.
  check_user_error(run_cli("train --arch bert --data " + dir / "labels.tsv" + " --out " + dir / "x" + tiny),
                   "labels.tsv is a file, not a prepared data directory");
  // A data directory where the labelled file goes (without --objective, --init on prepared data continues the
  // masked-LM pretraining).
  check_user_error(run_cli("train --init " + dir / "bert" + " --objective classify --data " + f.data_dir + " --out " +
                           dir / "x"),
                   "is a directory; a classifier reads a labelled .tsv or .jsonl file");
  // Prepared pairs score a t5 only.
  check_user_error(run_cli("eval --checkpoint " + dir / "bert" + " --data " + dir / "pairs"),
                   "holds prepared pairs, which score a t5");
  CHECK(!std::filesystem::exists(dir / "x"));
}
