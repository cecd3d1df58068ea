// BERT through the trainer: masked-LM pretraining, labelled-text reading, classification fine-tuning
// from a pretrained checkpoint (--init) and its metrics (accuracy, macro-F1).
#include "tests/catch_compat.h"

#include <cmath>
#include <random>

#include "data/corpus/labelled_text.h"
#include "tests/fixtures.h"
#include "tests/model_fixtures.h"
#include "train/checkpoint/checkpoint.h"
#include "train/eval/classifier_eval.h"
#include "train/trainer.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

TrainRequest bert_request(const Fixture& f, const std::string& out_dir, int64_t steps) {
  TrainRequest r;
  r.model = tiny_bert_config(f.vocab_size);
  r.train.objective = Objective::kMlm;
  r.train.data_dir = f.data_dir;
  r.train.out_dir = out_dir;
  r.train.steps = steps;
  r.train.batch_size = 16;
  r.train.lr = 3e-3;
  r.train.warmup = 5;
  r.train.eval_interval = steps;
  r.train.eval_iters = 4;
  r.train.device = "cpu";
  r.tokenizer_model = read_text(f.tokenizer_dir + "/tokenizer.model");
  r.show_progress = false;
  return r;
}

// A trivially separable task: texts of animal words versus texts of place words, with filler.
std::string toy_examples(int n, uint32_t seed, bool with_header) {
  const std::vector<std::string> animals = {"cat", "dog", "bird"}, places = {"river", "garden", "house", "tree"},
                                 filler = {"the", "a", "and"};
  std::mt19937 rng(seed);
  std::string tsv = with_header ? "text\tlabel\n" : "";
  for (int i = 0; i < n; ++i) {
    const bool animal = i % 2 == 0;
    const auto& words = animal ? animals : places;
    std::string text;
    for (int w = 0, len = 4 + int(rng() % 3); w < len; ++w) {  // a filler word, then class words
      text += w == 0 ? filler[rng() % filler.size()] : " " + words[rng() % words.size()];
    }
    tsv += text + "\t" + (animal ? "animal" : "place") + "\n";
  }
  return tsv;
}

}  // namespace

TEST_CASE("labelled text: TSV with header and pairs, JSONL, label order and errors", "[finetune]") {
  TempDir dir;
  write_text(dir / "a.tsv", "text\tlabel\nhello there\tpos\r\n\nbad day\tneg\n");
  auto a = read_labelled_text(dir / "a.tsv");
  REQUIRE(a.size() == 2);
  CHECK(a[0].text == "hello there");
  CHECK(a[0].label == "pos");
  CHECK(a[1].label == "neg");
  CHECK(label_set(a) == std::vector<std::string>{"neg", "pos"});

  write_text(dir / "pairs.tsv", "one\ttwo\t10\nthree\tfour\t9\nfive\tsix\t10\n");
  auto pairs = read_labelled_text(dir / "pairs.tsv");
  CHECK(pairs[1].text_pair == "four");
  CHECK(label_set(pairs) == std::vector<std::string>{"9", "10"});  // integers in numeric order

  write_text(dir / "b.jsonl", "{\"text\": \"x\", \"label\": 1}\n{\"text\": \"y\", \"text_pair\": \"z\", \"label\": \"k\"}\n");
  auto b = read_labelled_text(dir / "b.jsonl");
  CHECK(b[0].label == "1");
  CHECK(b[1].text_pair == "z");
  CHECK(label_id({"a", "b"}, "b") == 1);
  CHECK_THROWS_WITH(label_id({"a", "b"}, "c"), Catch::Contains("'c'") && Catch::Contains("a, b"));

  write_text(dir / "bad.tsv", "ok\tpos\nno label here\n");
  CHECK_THROWS_WITH(read_labelled_text(dir / "bad.tsv"), Catch::Contains("bad.tsv:2"));
  write_text(dir / "bad.jsonl", "{\"text\": \"x\"}\n");
  CHECK_THROWS_WITH(read_labelled_text(dir / "bad.jsonl"), Catch::Contains("bad.jsonl:1"));
  CHECK_THROWS_WITH(read_labelled_text(dir / "missing.tsv"), Catch::Contains("cannot open"));
}

TEST_CASE("labelled text: framing truncates the longer segment first", "[finetune]") {
  const Tokenizer tokenizer = Tokenizer::load(tiny_corpus("char").tokenizer_dir);
  const auto e = frame_labelled(tokenizer, {"abcdefghij", "xyz", "l"}, 10);  // 7 content slots: 4 + 3
  REQUIRE(e.ids.size() == 10);
  CHECK(e.ids[0] == special::kCls);
  CHECK(e.ids[5] == special::kSep);
  CHECK(e.ids[9] == special::kSep);
  CHECK(tokenizer.decode({int(e.ids[1]), int(e.ids[2]), int(e.ids[3]), int(e.ids[4])}) == "abcd");
  CHECK(e.token_types == std::vector<int64_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1});
}

TEST_CASE("classifier metrics: accuracy and macro-F1 of a hand-computed confusion matrix", "[finetune]") {
  ClassificationResult r;
  r.labels = {"a", "b", "c"};
  r.confusion = {{3, 1, 0}, {2, 4, 0}, {0, 0, 0}};  // label c never seen nor predicted: left out
  CHECK(r.examples() == 10);
  CHECK(r.accuracy() == Approx(0.7));
  // F1(a) = 6 / (6 + 2 + 1) = 2/3, F1(b) = 8 / (8 + 1 + 2) = 8/11.
  CHECK(r.macro_f1() == Approx((2.0 / 3.0 + 8.0 / 11.0) / 2.0));
}

TEST_CASE("bert pretrains with the masked-LM objective and fine-tunes into a classifier", "[finetune]") {
  const Fixture& f = tiny_corpus("bpe");
  TempDir dir;
  torch::manual_seed(1);
  auto pretrain = bert_request(f, dir / "pretrain", 30);
  const auto pretrained = train_model(pretrain, torch::kCPU);
  INFO("mlm train loss " << pretrained.last_train_loss << ", val loss " << pretrained.last_val_loss);
  CHECK(pretrained.last_val_loss < std::log(double(f.vocab_size)) - 1.0);
  const CheckpointInfo base = read_checkpoint(dir / "pretrain");
  CHECK(base.model.arch == Arch::kBert);

  write_text(dir / "train.tsv", toy_examples(64, 3, true));
  write_text(dir / "dev.tsv", toy_examples(20, 4, false));
  TrainRequest finetune;
  finetune.model = base.model;
  finetune.model.labels = label_set(read_labelled_text(dir / "train.tsv"));
  CHECK(finetune.model.labels == std::vector<std::string>{"animal", "place"});
  finetune.train.objective = Objective::kClassify;
  finetune.train.data_dir = dir / "train.tsv";
  finetune.train.val_data = dir / "dev.tsv";
  finetune.train.init_checkpoint = base.dir;
  finetune.train.out_dir = dir / "classifier";
  // [CLS] has no pretraining objective here (no next-sentence prediction): it takes a few dozen steps at a
  // high learning rate to learn to gather the sentence.
  finetune.train.steps = 60;
  finetune.train.batch_size = 16;
  finetune.train.lr = 5e-3;
  finetune.train.min_lr = 0;
  finetune.train.warmup = 0;
  finetune.train.eval_interval = 20;
  finetune.train.eval_iters = 1;
  finetune.train.device = "cpu";
  finetune.tokenizer_model = base.tokenizer_model;
  finetune.show_progress = false;

  SECTION("--init copies the pretrained encoder into the classifier") {
    AnyModel model = build_model(finetune.model);
    init_from_checkpoint(model, base);
    AnyModel original = load_model(base, torch::kCPU);
    auto encoder = model.as<BertClassifier>()->bert->named_parameters();
    for (const auto& item : original.as<Bert>()->named_parameters()) {
      CHECK(torch::equal(item.value(), encoder[item.key()]));
    }
    ModelConfig gpt_config;
    gpt_config.vocab_size = f.vocab_size;
    AnyModel gpt = build_model(gpt_config);
    CHECK_THROWS_WITH(init_from_checkpoint(gpt, base), Catch::Contains("shape"));
  }
  SECTION("fine-tuning learns the task; eval reports accuracy on the labelled dev file") {
    const auto tuned = train_model(finetune, torch::kCPU);
    CHECK(tuned.last_val_loss < 0.2);
    AnyModel model = load_model(read_checkpoint(dir / "classifier"), torch::kCPU);
    REQUIRE(model.is<BertClassifier>());
    const Tokenizer tokenizer = Tokenizer::from_serialized(base.tokenizer_model);
    BertClassifier classifier = model.as<BertClassifier>();
    const auto result = evaluate_classifier(classifier, tokenizer, read_labelled_text(dir / "dev.tsv"), 8,
                                            torch::kCPU);
    CHECK(result.examples() == 20);
    CHECK(result.accuracy() == 1.0);
    CHECK(result.macro_f1() == 1.0);
    const auto ranked = classify_text(classifier, tokenizer, "the dog and a cat", "", torch::kCPU);
    CHECK(ranked[0].first == "animal");
    CHECK(ranked[0].second > 0.9);
    CHECK(ranked[0].second + ranked[1].second == Approx(1.0));
  }
}

TEST_CASE("classifier eval: precision bf16 runs the forward passes under autocast", "[finetune]") {
  const Fixture& f = tiny_corpus("bpe");
  TempDir dir;
  write_text(dir / "dev.tsv", toy_examples(12, 5, false));
  ModelConfig config = tiny_bert_config(f.vocab_size);
  config.labels = {"animal", "place"};
  torch::manual_seed(4);
  AnyModel model = build_model(config);
  const Tokenizer tokenizer = Tokenizer::load(f.tokenizer_dir);
  const auto examples = read_labelled_text(dir / "dev.tsv");
  BertClassifier classifier = model.as<BertClassifier>();
  const auto exact = evaluate_classifier(classifier, tokenizer, examples, 4, torch::kCPU);
  const auto rounded = evaluate_classifier(classifier, tokenizer, examples, 4, torch::kCPU, Precision::kBf16);
  INFO("fp32 loss " << exact.nll_sum << ", bf16 loss " << rounded.nll_sum);
  CHECK(rounded.examples() == 12);
  CHECK(rounded.nll_sum != exact.nll_sum);
  CHECK(rounded.nll_sum == Approx(exact.nll_sum).epsilon(0.02));
}
