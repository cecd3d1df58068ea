// Tests of the policies the library answers for every front end: resized model configs, classifier defaults, the
// model kind of each family, published parameter counts, and which tokenizer file of a folder is read first.
#include "tests/catch_compat.h"

#include "data/gguf/gguf_tokenizer.h"
#include "data/gguf/gguf_writer.h"
#include "data/tokenizers/hf_json/tokenizer_json_writer.h"
#include "data/tokenizers/tokenizer.h"
#include "models/presets.h"
#include "models/registry.h"
#include "tests/fixtures.h"
#include "tests/tokenizer_kinds_fixtures.h"
#include "train/train_config.h"

using namespace lmzoo;
using namespace lmzoo::test;
namespace fs = std::filesystem;

TEST_CASE("resized keeps a preset's proportions where a given size derives others", "[policy]") {
  const ModelConfig t5 = find_preset("t5-small").config;  // head_dim 64, d_ff 2048, 6 + 6 layers
  ModelConfig asked = t5;
  asked.d_model = 256;
  ModelConfig c = resized(t5, asked, {"d_model"});
  CHECK(c.d_model == 256);
  CHECK(c.d_ff == 0);                // derived again: 4 * 256
  CHECK(c.ff_dim() == 1024);
  CHECK(c.head_dim == 0);            // derived again: 256 / 8
  CHECK(c.head_size() == 32);
  CHECK(c.n_layer == 6);

  asked = t5;
  asked.n_layer = 2;
  c = resized(t5, asked, {"n_layer"});
  CHECK((c.n_layer == 2 && c.n_decoder_layer == 0));  // both stacks
  CHECK(c.head_dim == 64);                            // no width or head change: the preset's head size stays
  asked.n_decoder_layer = 3;
  c = resized(t5, asked, {"n_layer", "n_decoder_layer"});
  CHECK((c.n_layer == 2 && c.n_decoder_layer == 3));

  const ModelConfig llama = find_preset("llama-nano").config;  // 4 heads, 2 kv heads
  REQUIRE((llama.n_head == 4 && llama.n_kv_heads == 2));
  asked = llama;
  asked.n_head = 8;
  CHECK(resized(llama, asked, {"n_head"}).n_kv_heads == 2);  // 2 still divides 8
  asked.n_head = 6;
  CHECK(resized(llama, asked, {"n_head"}).n_kv_heads == 2);  // and 6
  asked.n_head = 5;
  CHECK(resized(llama, asked, {"n_head"}).n_kv_heads == 0);  // plain heads
  asked.n_kv_heads = 5;
  CHECK(resized(llama, asked, {"n_head", "n_kv_heads"}).n_kv_heads == 5);  // given: taken as it is

  asked = llama;
  asked.d_ff = 999;
  asked.d_model = 64;
  c = resized(llama, asked, {"d_model", "d_ff"});
  CHECK((c.d_model == 64 && c.d_ff == 999));
  CHECK(resized(llama, asked, {}).d_ff == llama.d_ff);  // nothing given: nothing changes
}

TEST_CASE("with_classifier_defaults sets HF Trainer's values except where the user chose", "[policy]") {
  TrainConfig t;
  t.lr = 0.123;
  t.warmup = 77;
  t.beta2 = 0.5;
  t.steps = 9;
  const TrainConfig d = classifier_defaults();
  const TrainConfig c = with_classifier_defaults(t, {"lr"});
  CHECK(c.lr == 0.123);
  CHECK(c.warmup == d.warmup);
  CHECK(c.warmup == 0);
  CHECK(c.beta2 == 0.999);
  CHECK(c.schedule == Schedule::kLinear);
  CHECK(c.min_lr == 0.0);
  CHECK(c.weight_decay == 0.01);
  CHECK(c.steps == 9);  // not a classifier default: the run's own
  CHECK(with_classifier_defaults(t, {"lr", "warmup", "beta2", "schedule", "min_lr", "weight_decay"}).warmup == 77);
}

TEST_CASE("model_kind names each family once, and family_name follows it", "[policy]") {
  ModelConfig c;
  c.arch = Arch::kGpt;
  CHECK(model_kind(c) == ModelKind::kCausalLm);
  CHECK(family_name(c) == "gpt");
  c.arch = Arch::kBert;
  CHECK(model_kind(c) == ModelKind::kMaskedLm);
  CHECK(family_name(c) == "bert");
  c.labels = {"neg", "pos"};
  CHECK(model_kind(c) == ModelKind::kClassifier);
  CHECK(family_name(c) == "bert-classifier");
  c.labels.clear();
  c.arch = Arch::kT5;
  CHECK(model_kind(c) == ModelKind::kSeq2seq);
  CHECK(family_name(c) == "t5");
}

TEST_CASE("published_parameter_count gives the counts the models were published with", "[policy][zoo]") {
  CHECK(published_parameter_count(find_preset("gpt2").config) == 124439808);       // GPT-2 small, tied head
  CHECK(published_parameter_count(find_preset("bert-base").config) == 109482240);  // encoder + pooler, no MLM head
  CHECK(published_parameter_count(find_preset("t5-small").config) == 60506624);    // T5 small, tied
}

TEST_CASE("a folder with tokenizer.json and tokenizer.model is read as transformers reads it: tokenizer.json",
          "[policy][tokenizers]") {
  TempDir dir;
  // Two different tokenizers: the folder's tokenizer.model (unigram, 120 pieces) and a tokenizer.json made from
  // another model (BPE, 400 pieces): the ids must be tokenizer.json's.
  TempDir other;
  write_text(other / "tokenizer.model", train_llama_bpe_spm());
  const Tokenizer bpe = Tokenizer::load(other / "tokenizer.model");
  write_text(dir / "tokenizer.json", *tokenizer_json_for(bpe));
  write_text(dir / "tokenizer.model", train_hf_spm(SpmStyle::kLlama));
  const Tokenizer both = Tokenizer::load(dir.path.string());
  CHECK(both.kind() == TokenizerKind::kHfJson);
  CHECK(both.vocab_size() == bpe.vocab_size());
  const std::string text = "the cat sat on the mat, 1234 times  over";
  CHECK(both.encode(text) == bpe.encode(text));
  CHECK(both.files().count("tokenizer.model") == 1);  // kept beside it
  const Tokenizer again = Tokenizer::from_serialized(both.serialized());
  CHECK(again.encode(text) == bpe.encode(text));

  // GGUF's llama tokenizer comes from the SentencePiece model a byte-fallback tokenizer.json was made from.
  TempDir pair;
  write_text(pair / "tokenizer.model", bpe.serialized());
  write_text(pair / "tokenizer.json", *tokenizer_json_for(bpe));
  GgufWriter w;
  w.add("general.architecture", GgufValue::string("llama"));
  const GgufTokenizerSummary summary = add_gguf_tokenizer(w, Tokenizer::load(pair.path.string()), bpe.vocab_size());
  CHECK(summary.model == "llama");
  CHECK(summary.tokens == bpe.vocab_size());
  fs::remove(pair / "tokenizer.model");
  GgufWriter alone;
  CHECK_THROWS_WITH(add_gguf_tokenizer(alone, Tokenizer::load(pair.path.string()), bpe.vocab_size()),
                    Catch::Contains("not byte-level BPE"));
}
