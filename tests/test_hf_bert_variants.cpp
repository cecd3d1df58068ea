// RoBERTa (RobertaForMaskedLM) and DistilBERT (DistilBertForMaskedLM): config mapping and refusals, the published
// preset counts, the bert switches they need (position_offset, no token types) in the model and its TorchScript
// export, and tiny save_pretrained-style checkpoints (tests/hf_reference.py) imported against float64 references,
// exported back bit for bit, their tokenizers round-tripped, and trained with --init.
#include <filesystem>

#include <torch/script.h>

#include "data/corpus/shards.h"
#include "data/tokenizers/gpt2_byte_level.h"
#include "data/tokenizers/tokenizer.h"
#include "data/unicode/unicode_text.h"
#include "models/bert_presets.h"
#include "models/hf_config.h"
#include "models/hf_weights.h"
#include "models/parameter_sizes.h"
#include "models/presets.h"
#include "models/torchscript_export.h"
#include "tests/catch_compat.h"
#include "tests/cli_helpers.h"
#include "tests/export_helpers.h"
#include "tests/fixtures.h"
#include "tests/hf_round_trip.h"
#include "tests/model_fixtures.h"
#include "tests/tokenizer_kinds_fixtures.h"
#include "train/checkpoint/checkpoint.h"

using namespace lmzoo;
using namespace lmzoo::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json roberta_hf() {
  return {{"architectures", {"RobertaForMaskedLM"}}, {"model_type", "roberta"}, {"vocab_size", 50265},
          {"hidden_size", 768}, {"num_hidden_layers", 12}, {"num_attention_heads", 12}, {"intermediate_size", 3072},
          {"max_position_embeddings", 514}, {"type_vocab_size", 1}, {"layer_norm_eps", 1e-5}, {"pad_token_id", 1},
          {"bos_token_id", 0}, {"eos_token_id", 2}, {"hidden_act", "gelu"}, {"position_embedding_type", "absolute"}};
}

json distilbert_hf() {
  return {{"architectures", {"DistilBertForMaskedLM"}}, {"model_type", "distilbert"}, {"vocab_size", 30522},
          {"dim", 768}, {"n_layers", 6}, {"n_heads", 12}, {"hidden_dim", 3072}, {"max_position_embeddings", 512},
          {"activation", "gelu"}, {"dropout", 0.1}, {"attention_dropout", 0.1}, {"sinusoidal_pos_embds", false},
          {"tie_weights_", true}, {"pad_token_id", 0}};
}

// A RoBERTa-style tokenizer.json: <s> 0 <pad> 1 </s> 2 <unk> 3, the 256 byte characters (4 + byte), five merges,
// <mask> 265 (left-stripping, as RoBERTa's), ByteLevel pre-tokenizer and decoder, RobertaProcessing. No
// tokenizer_config.json: the special ids come from the token names.
void write_roberta_tokenizer(const fs::path& dir) {
  json vocab = {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}};
  for (int b = 0; b < 256; ++b) {
    std::string c;
    append_utf8(gpt2_byte_to_char(uint8_t(b)), c);
    vocab[c] = 4 + b;
  }
  const std::string G = "\xC4\xA0";  // Ġ, the byte-level space
  vocab[G + "t"] = 260;
  vocab["he"] = 261;
  vocab[G + "the"] = 262;
  vocab["an"] = 263;
  vocab[G + "a"] = 264;
  vocab["<mask>"] = 265;
  auto added = [](int id, const std::string& content, bool lstrip, bool normalized) {
    return json{{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", lstrip}, {"rstrip", false},
                {"normalized", normalized}, {"special", true}};
  };
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                           {"use_regex", true}};
  const json tokenizer = {
      {"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr},
      {"added_tokens", {added(0, "<s>", false, true), added(1, "<pad>", false, true), added(2, "</s>", false, true),
                        added(3, "<unk>", false, true), added(265, "<mask>", true, false)}},
      {"normalizer", nullptr}, {"pre_tokenizer", byte_level},
      {"post_processor", {{"type", "RobertaProcessing"}, {"sep", {"</s>", 2}}, {"cls", {"<s>", 0}},
                          {"trim_offsets", true}, {"add_prefix_space", false}}},
      {"decoder", byte_level},
      {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
                 {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false}, {"vocab", vocab},
                 {"merges", {G + " t", "h e", G + "t he", "a n", G + " a"}}}}};
  fs::create_directories(dir);
  write_text(dir / "tokenizer.json", tokenizer.dump());
}

// The tokenizer directory of each test checkpoint: RoBERTa's byte-level BPE or BERT-uncased's WordPiece vocab.txt.
std::string tokenizer_dir_for(const TempDir& dir, const std::string& arch) {
  const fs::path tok = dir.path / "tokenizer";
  if (!fs::exists(tok)) {
    if (arch.rfind("roberta", 0) == 0) {
      write_roberta_tokenizer(tok);
    } else {
      fs::create_directories(tok);
      write_bert_vocab(tok, /*cased=*/false);
    }
  }
  return tok.string();
}

// make ARCH sized to the tokenizer, its files beside the weights; import; returns the checkpoint directory.
std::string make_and_import(const TempDir& dir, const std::string& arch) {
  const std::string tok = tokenizer_dir_for(dir, arch);
  const Tokenizer tokenizer = Tokenizer::load(tok);
  const std::string hf = dir / ("hf_" + arch), ckpt = dir / ("ck_" + arch);
  REQUIRE(run_shell(kReference + " make " + arch + " " + hf + " --vocab " + std::to_string(tokenizer.vocab_size()),
                    dir / "make.log"));
  for (const auto& item : tokenizer.files()) write_text(fs::path(hf) / item.first, item.second);
  auto imported = run_cli("import " + hf + " --out " + ckpt);
  INFO(imported.out << imported.err);
  REQUIRE(imported.exit_code == 0);
  return ckpt;
}

// Inputs with padding: RoBERTa's rows carry pad id 1 where the mask is 0 (HF finds pads by id), one pad inside a
// row so that the later positions must skip it; DistilBERT's pads are [PAD] 0.
std::string padded_ids_json(const std::string& arch) {
  if (arch.rfind("roberta", 0) == 0) {
    return R"({"input_ids": [[0, 17, 42, 96, 33, 71, 2], [0, 5, 6, 1, 8, 2, 1]],
               "attention_mask": [[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 1, 1, 0]]})";
  }
  return R"({"input_ids": [[101, 17, 42, 96, 33, 71, 102], [101, 5, 6, 7, 102, 0, 0]],
             "attention_mask": [[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0, 0]]})";
}

// The TorchScript export of CKPT against the float64 reference of HF_DIR on padded inputs, within 1e-5.
void check_against_reference(const TempDir& dir, const std::string& arch, const std::string& hf,
                             const std::string& ckpt) {
  REQUIRE(run_cli("export --checkpoint " + ckpt + " --out " + (dir / "model.pt")).exit_code == 0);
  write_text(dir / "ids.json", padded_ids_json(arch));
  const bool close = run_shell(kReference + " compare " + arch + " " + hf + " " + (dir / "model.pt") + " " +
                                   (dir / "ids.json") + " --tol 1e-5",
                               dir / "compare.log");
  const std::string log = read_text(dir / "compare.log");
  INFO(log);
  CHECK(close);
  std::printf("%s", log.c_str());  // max_abs_diff, for the report
}

const char* kText = "the cat and the dog sat on a mat, ran and ran.";

ModelConfig tiny_family_config(int64_t type_vocab, int64_t offset) {
  ModelConfig c = tiny_bert_config(99, 32, 2, 4, 16);
  c.type_vocab_size = type_vocab;
  c.position_offset = offset;
  c.bias = true;
  c.tie_embeddings = true;
  c.activation = Activation::kGelu;
  c.norm_eps = 1e-12;  // DistilBERT's, fixed in its code
  return c;
}

}  // namespace

TEST_CASE("RoBERTa and DistilBERT configs map onto lmzoo's fields and back", "[hf][bertfam]") {
  const auto roberta = model_config_from_hf(roberta_hf());
  CHECK(roberta.architecture == HfArchitecture::kRobertaForMaskedLM);
  CHECK(roberta.config.position_offset == 2);
  CHECK(roberta.config.max_seq_len == 512);
  CHECK(roberta.config.type_vocab_size == 1);
  CHECK(roberta.config.norm_eps == 1e-5);
  CHECK(roberta.config.norm_position == NormPosition::kPost);
  CHECK(hf_architecture_of(roberta.config) == HfArchitecture::kRobertaForMaskedLM);
  const json back = hf_config_from_model(roberta.config, HfArchitecture::kRobertaForMaskedLM, {1, 0, 2});
  CHECK(back["max_position_embeddings"] == 514);
  CHECK(back["pad_token_id"] == 1);
  CHECK(back["model_type"] == "roberta");

  const auto distil = model_config_from_hf(distilbert_hf());
  CHECK(distil.architecture == HfArchitecture::kDistilBertForMaskedLM);
  CHECK(distil.config.type_vocab_size == 0);
  CHECK(distil.config.position_offset == 0);
  CHECK(distil.config.norm_eps == 1e-12);
  CHECK(distil.config.ff_dim() == 3072);
  CHECK(distil.config.tie_embeddings);
  CHECK(hf_architecture_of(distil.config) == HfArchitecture::kDistilBertForMaskedLM);
  const json dback = hf_config_from_model(distil.config, HfArchitecture::kDistilBertForMaskedLM, {});
  CHECK(dback["dim"] == 768);
  CHECK(dback["hidden_dim"] == 3072);
  CHECK(dback["sinusoidal_pos_embds"] == false);
  CHECK(model_config_from_hf(dback).config.n_layer == 6);

  json differing = distilbert_hf();  // one dropout rate in lmzoo: a note, not a refusal
  differing["attention_dropout"] = 0.2;
  CHECK(model_config_from_hf(differing).notes.size() == 1);

  // model_type alone picks the class.
  json untagged = roberta_hf();
  untagged.erase("architectures");
  CHECK(model_config_from_hf(untagged).architecture == HfArchitecture::kRobertaForMaskedLM);
  // BERT stays BERT.
  CHECK(hf_architecture_of(find_preset("bert-base").config) == HfArchitecture::kBertForMaskedLM);
}

TEST_CASE("RoBERTa and DistilBERT fields lmzoo cannot represent are refused by name", "[hf][bertfam]") {
  json sinusoidal = distilbert_hf();
  sinusoidal["sinusoidal_pos_embds"] = true;
  CHECK(refusal(sinusoidal) == "config.json: sinusoidal_pos_embds true is not supported (lmzoo implements false)");
  json relative = roberta_hf();
  relative["position_embedding_type"] = "relative_key";
  CHECK(refusal(relative).find("position_embedding_type 'relative_key'") != std::string::npos);
  json decoder = roberta_hf();
  decoder["is_decoder"] = true;
  CHECK(refusal(decoder).find("is_decoder true") != std::string::npos);
  json cross = roberta_hf();
  cross["add_cross_attention"] = true;
  CHECK(refusal(cross).find("add_cross_attention true") != std::string::npos);
  json short_table = roberta_hf();
  short_table["max_position_embeddings"] = 2;
  CHECK(refusal(short_table).find("max_position_embeddings 2") != std::string::npos);
  json relu_head = roberta_hf();
  relu_head["hidden_act"] = "relu";
  CHECK(refusal(relu_head).find("hidden_act 'relu'") != std::string::npos);
  json no_types = roberta_hf();
  no_types["type_vocab_size"] = 0;
  CHECK(refusal(no_types).find("type_vocab_size 0") != std::string::npos);
  json bad_activation = distilbert_hf();
  bad_activation["activation"] = "tanh";
  CHECK(refusal(bad_activation).find("activation 'tanh'") != std::string::npos);
  json missing = distilbert_hf();
  missing.erase("hidden_dim");
  CHECK(refusal(missing) == "config.json has no 'hidden_dim'");

  // Shapes without a twin: classifiers (both classes have their own heads), DistilBERT with other eps.
  ModelConfig classifier = find_preset("roberta-base").config;
  classifier.labels = {"a", "b"};
  CHECK(twin_refusal(classifier).find("RoBERTa needs its own classification head") != std::string::npos);
  ModelConfig eps = find_preset("distilbert-base").config;
  eps.norm_eps = 1e-5;
  CHECK(twin_refusal(eps).find("eps 1e-12") != std::string::npos);
  // HF finds RoBERTa's pads by pad_token_id: a tokenizer whose pad is elsewhere has no twin.
  try {
    hf_config_from_model(find_preset("roberta-base").config, HfArchitecture::kRobertaForMaskedLM, {0, 1, 2});
    FAIL("a pad id other than position_offset - 1 must be refused");
  } catch (const HfFormatError& e) {
    CHECK(std::string(e.what()).find("position_offset - 1 = 1") != std::string::npos);
  }
}

TEST_CASE("roberta-base and distilbert-base have their masked-LM classes' published counts", "[hf][presets][bertfam]") {
  const ModelConfig roberta = find_preset("roberta-base").config;
  const ModelConfig distil = find_preset("distilbert-base").config;
  // Hand-computed from the HF modules. RoBERTa: embeddings 50265*768 + 514*768 + 1*768 + 2*768 = 39,000,576;
  // 12 layers of 4*(768*768+768) + 3072*768+3072 + 768*3072+768 + 4*768 = 7,087,872; lm_head dense 590,592 +
  // layer_norm 1,536 + bias 50,265.
  CHECK(39000576 + 12 * 7087872 + 590592 + 1536 + 50265 == 124697433);
  CHECK(published_bert_parameters(roberta) == 124697433);
  // DistilBERT: embeddings 30522*768 + 512*768 + 2*768 = 23,835,648; 6 layers; vocab_transform 590,592 +
  // vocab_layer_norm 1,536 + vocab_projector bias 30,522.
  CHECK(23835648 + 6 * 7087872 + 590592 + 1536 + 30522 == 66985530);
  CHECK(published_bert_parameters(distil) == 66985530);
  // lmzoo's Bert keeps its pooler (d^2 + d) for classifier fine-tunes; the class has none.
  CHECK(parameter_count(roberta) == 124697433 + 768 * 768 + 768);
  CHECK(parameter_count(distil) == 66985530 + 768 * 768 + 768);
  CHECK_FALSE(bert_has_hf_pooler(roberta));
  CHECK_FALSE(bert_has_hf_pooler(distil));
  CHECK(bert_has_hf_pooler(find_preset("bert-base").config));
  CHECK(published_bert_parameters(find_preset("bert-base").config) == 109482240);

  auto presets = run_cli("presets");
  REQUIRE(presets.exit_code == 0);
  CHECK(presets.out.find("124697433") != std::string::npos);
  CHECK(presets.out.find("66985530") != std::string::npos);
  CHECK(presets.out.find("FacebookAI/roberta-base") != std::string::npos);
  CHECK(presets.out.find("distilbert/distilbert-base-uncased") != std::string::npos);

  // The formula against built models of both shapes (tiny), and the HF tensors they export.
  for (const auto& [types, offset] : {std::pair<int64_t, int64_t>{1, 2}, {0, 0}}) {
    const ModelConfig c = tiny_family_config(types, offset);
    Bert model(c);
    int64_t built = 0;
    for (const auto& p : model->parameters()) built += p.numel();
    CHECK(built == parameter_count(c));
    const HfArchitecture a = hf_architecture_of(c);
    int64_t exported = 0;
    for (const auto& item : hf_tensors_from_model(*model, a, c)) {
      if (item.first != "lm_head.decoder.bias") exported += item.second.numel();  // RoBERTa's copy of lm_head.bias
    }
    CHECK(exported == published_bert_parameters(c));
  }
}

TEST_CASE("bert with position_offset and without token types: positions and segment ids", "[bert][bertfam]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  Bert roberta(tiny_family_config(1, 2));
  roberta->eval();
  CHECK(roberta->position_embeddings->weight.size(0) == 16 + 2);
  // A full-length row reads rows 2 .. 17; right padding leaves the real tokens' logits as they are alone.
  auto ids = torch::randint(3, 99, {1, 16}, torch::kLong);
  CHECK(roberta->forward(ids).sizes() == torch::IntArrayRef({1, 16, 99}));
  auto short_ids = ids.narrow(1, 0, 10);
  auto padded = torch::cat({short_ids, torch::ones({1, 6}, torch::kLong)}, 1);
  auto mask = torch::cat({torch::ones({1, 10}, torch::kLong), torch::zeros({1, 6}, torch::kLong)}, 1);
  CHECK(torch::allclose(roberta->forward(padded, mask).narrow(1, 0, 10), roberta->forward(short_ids), 0, 1e-5));
  // A pad inside a row is skipped by the later positions: the row reads like the row without it.
  auto holed = torch::cat({short_ids.narrow(1, 0, 4), torch::ones({1, 1}, torch::kLong), short_ids.narrow(1, 4, 6)}, 1);
  auto holed_mask = torch::ones({1, 11}, torch::kLong);
  holed_mask[0][4] = 0;
  auto got = roberta->forward(holed, holed_mask);
  CHECK(torch::allclose(torch::cat({got.narrow(1, 0, 4), got.narrow(1, 5, 6)}, 1), roberta->forward(short_ids), 0, 1e-5));
  // One token type: segment ids (sentence pairs) are ignored, as RoBERTa's tokenizer gives all 0.
  auto types = torch::randint(0, 2, {1, 16}, torch::kLong);
  CHECK(torch::equal(roberta->forward(ids, {}, types), roberta->forward(ids)));

  Bert distil(tiny_family_config(0, 0));
  distil->eval();
  CHECK(distil->token_type_embeddings.is_empty());
  CHECK(distil->named_parameters().find("token_type_embeddings.weight") == nullptr);
  CHECK(torch::equal(distil->forward(ids, {}, types), distil->forward(ids)));
}

TEST_CASE("RoBERTa- and DistilBERT-shaped berts export to TorchScript that matches lmzoo", "[export][variants][bertfam]") {
  torch::NoGradGuard no_grad;
  TempDir dir;
  for (const auto& [types, offset] : {std::pair<int64_t, int64_t>{1, 2}, {0, 0}, {1, 5}, {2, 1}}) {
    INFO("type_vocab_size " << types << ", position_offset " << offset);
    torch::manual_seed(34);
    Bert model(tiny_family_config(types, offset));
    perturb(*model);
    model->eval();
    auto loaded = save_and_load(export_bert(model, "tok"), dir / "bert.pt");
    auto ids = torch::randint(0, 99, {3, 12}, torch::kLong);
    auto mask = padding_mask(3, 12);
    mask[0][5] = 0;  // a pad inside a row
    auto segment = torch::randint(0, std::max<int64_t>(types, 1), {3, 12}, torch::kLong);
    check_close(loaded.forward({ids, mask, segment}).toTensor(), model->forward(ids, mask, segment));
    check_close(loaded.forward({ids}).toTensor(), model->forward(ids));
    check_close(tuple_item(loaded.get_method("encode")({ids, mask, segment}), 1), model->pooled(ids, mask, segment));
  }
}

namespace {

// make -> import -> TorchScript vs the float64 reference (padded inputs) -> export --format hf -> the source's
// tensors bit for bit -> import again -> the same weights. roberta-hub: import and reference only.
void reference_round_trip(const std::string& arch) {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  {
    INFO(arch);
    TempDir dir;
    const std::string ckpt = make_and_import(dir, arch), hf = dir / ("hf_" + arch);
    check_against_reference(dir, arch, hf, ckpt);
    const CheckpointInfo info = read_checkpoint(ckpt);
    if (arch == "roberta-hub") {  // its pooler comes in; export leaves it out (the class has none)
      const auto model = load_model(info, torch::kCPU);
      const auto params = model.module()->named_parameters();  // find points into it: kept while it is read
      const torch::Tensor* pooler = params.find("pooler.bias");
      REQUIRE(pooler != nullptr);
      CHECK(pooler->abs().max().item<double>() > 0.0);  // lmzoo initialises biases to 0; the file's are not
      return;
    }
    const std::string back = dir / "back", again = dir / "again";
    export_back_bit_for_bit(ckpt, hf, back, again, dir.path.string());
    const json config = json::parse(read_text(fs::path(back) / "config.json"));
    CHECK(config["model_type"] == (arch.rfind("roberta", 0) == 0 ? "roberta" : "distilbert"));
  }
}

}  // namespace

TEST_CASE("imported RoBERTa matches a float64 reference and exports back bit for bit", "[hf][python][bertfam]") {
  reference_round_trip("roberta");
}

TEST_CASE("RoBERTa as the Hub file holds it (pooler, tied copies, buffers) imports and matches", "[hf][python][bertfam]") {
  reference_round_trip("roberta-hub");
}

TEST_CASE("imported DistilBERT matches a float64 reference and exports back bit for bit", "[hf][python][bertfam]") {
  reference_round_trip("distilbert");
}

TEST_CASE("imported untied relu DistilBERT matches a float64 reference and exports back", "[hf][python][bertfam]") {
  reference_round_trip("distilbert-untied");
}

TEST_CASE("RoBERTa's byte-level BPE and DistilBERT's WordPiece: special ids; fill-mask; tokenizer.json round trip",
          "[hf][python][bertfam]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  for (const std::string arch : {"roberta", "distilbert"}) {
    INFO(arch);
    TempDir dir;
    const std::string ckpt = make_and_import(dir, arch);
    const Tokenizer source = Tokenizer::load(tokenizer_dir_for(dir, arch));
    const Tokenizer imported = Tokenizer::from_serialized(read_checkpoint(ckpt).tokenizer_model);
    const SpecialIds& s = imported.special();
    if (arch == "roberta") {  // <s> </s> <pad> <mask> from the token names (no tokenizer_config.json)
      CHECK(s.cls == 0);
      CHECK(s.pad == 1);
      CHECK(s.sep == 2);
      CHECK(s.mask == 265);
      CHECK(imported.kind() == TokenizerKind::kHfJson);
    } else {
      CHECK(s.pad == 0);
      CHECK(s.cls == 101);
      CHECK(s.sep == 102);
      CHECK(s.mask == 103);
    }
    const std::string mask_token = arch == "roberta" ? "<mask>" : "[MASK]";
    auto filled = run_cli("generate --checkpoint " + ckpt + " --prompt 'the cat " + mask_token + " on the mat'");
    INFO(filled.out << filled.err);
    CHECK(filled.exit_code == 0);
    CHECK_FALSE(filled.out.empty());

    // The exported tokenizer.json alone gives the source tokenizer's ids.
    REQUIRE(run_cli("export --checkpoint " + ckpt + " --format hf --out " + (dir / "back")).exit_code == 0);
    const fs::path only_json = dir.path / "only-json";
    fs::create_directories(only_json);
    fs::copy_file(dir.path / "back" / "tokenizer.json", only_json / "tokenizer.json");
    const Tokenizer reread = Tokenizer::load(only_json.string());
    const std::string text = std::string(kText) + " the " + mask_token + " !";
    CHECK(reread.encode(text) == source.encode(text));
    CHECK(reread.special().mask == s.mask);
    CHECK(reread.special().cls == s.cls);
    CHECK(reread.special().sep == s.sep);
    CHECK(reread.special().pad == s.pad);
    if (arch == "roberta") {
      CHECK(read_text(dir.path / "back" / "tokenizer.json") == read_text(dir.path / "tokenizer" / "tokenizer.json"));
      const json config = json::parse(read_text(dir.path / "back" / "config.json"));
      CHECK(config["pad_token_id"] == 1);
      CHECK(config["bos_token_id"] == 0);
      CHECK(config["eos_token_id"] == 2);
    }
  }
}

TEST_CASE("train --init continues imported RoBERTa and DistilBERT with masked LM", "[hf][python][bertfam]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  for (const std::string arch : {"roberta", "distilbert"}) {
    INFO(arch);
    TempDir dir;
    const std::string ckpt = make_and_import(dir, arch);
    std::string jsonl;
    for (uint32_t doc = 0; doc < 12; ++doc) jsonl += json{{"text", english_like_text(400, doc + 1)}}.dump() + "\n";
    write_text(dir / "corpus.jsonl", jsonl);
    PrepareOptions prepare;
    prepare.tokenizer = tokenizer_dir_for(dir, arch);
    prepare.inputs = {dir / "corpus.jsonl"};
    prepare.out_dir = dir / "data";
    prepare.val_fraction = 0.1;
    prepare_data(prepare);
    auto trained = run_cli("train --init " + ckpt + " --data " + (dir / "data") + " --objective mlm --steps 30 " +
                           "--batch-size 8 --lr 3e-3 --warmup 0 --log-interval 1 --eval-interval 30 --eval-iters 1 " +
                           "--out " + (dir / "run"));
    INFO(trained.out << trained.err);
    REQUIRE(trained.exit_code == 0);
    std::vector<double> losses;
    std::istringstream lines(read_text(dir.path / "run" / "metrics.jsonl"));
    for (std::string line; std::getline(lines, line);) {
      const json record = json::parse(line);
      if (record["type"] == "train") losses.push_back(record["loss"].get<double>());
    }
    REQUIRE(losses.size() >= 20);
    for (double l : losses) CHECK(std::isfinite(l));
    const double first = (losses[0] + losses[1] + losses[2]) / 3;
    const double last = (losses[losses.size() - 1] + losses[losses.size() - 2] + losses[losses.size() - 3]) / 3;
    INFO("first " << first << ", last " << last);
    CHECK(last < first - 0.3);
    std::printf("%s train --init mlm: loss %.3f -> %.3f\n", arch.c_str(), first, last);
  }
}

TEST_CASE("lmzoo import refuses RoBERTa / DistilBERT it cannot represent (one line, nothing written)",
          "[hf][python][bertfam]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  TempDir dir;
  struct Case {
    std::string arch, field, value_json, expected;
  };
  const std::vector<Case> cases = {
      {"distilbert", "sinusoidal_pos_embds", "true", "sinusoidal_pos_embds true is not supported"},
      {"roberta", "position_embedding_type", "\"relative_key\"", "position_embedding_type 'relative_key'"},
      // A layer more than the file holds: a missing tensor, named.
      {"distilbert", "n_layers", "3",
       "the checkpoint has no tensor 'distilbert.transformer.layer.2.attention.q_lin.weight'"},
      // A wider feed-forward than the file's: a wrong shape, named.
      {"roberta", "intermediate_size", "48", "tensor 'roberta.encoder.layer.0.intermediate.dense.weight' has shape"},
      {"distilbert", "hidden_dim", "48", "tensor 'distilbert.transformer.layer.0.ffn.lin1.weight' has shape"},
  };
  for (const std::string arch : {"roberta", "distilbert"}) {  // one good directory of each, copied per case
    const TempDir tok_dir;
    const Tokenizer tokenizer = Tokenizer::load(tokenizer_dir_for(tok_dir, arch));
    const std::string good = dir / ("good_" + arch);
    REQUIRE(run_shell(kReference + " make " + arch + " " + good + " --vocab " + std::to_string(tokenizer.vocab_size()),
                      dir / "make.log"));
    for (const auto& item : tokenizer.files()) write_text(fs::path(good) / item.first, item.second);
  }
  for (const auto& c : cases) {
    INFO(c.arch << " " << c.field);
    const std::string hf = dir / ("bad_" + c.arch + "_" + c.field), out = dir / ("out_" + c.field);
    fs::copy(dir.path / ("good_" + c.arch), hf);
    json config = json::parse(read_text(fs::path(hf) / "config.json"));
    config[c.field] = json::parse(c.value_json);
    write_text(fs::path(hf) / "config.json", config.dump());
    auto r = run_cli("import " + hf + " --out " + out);
    // 2: config.json itself is refused (as a bad flag); 1: the weights do not fit the config.
    const bool weights = c.expected.find("tensor '") != std::string::npos;
    CHECK(r.exit_code == (weights ? 1 : 2));
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.find(c.expected) != std::string::npos);
    CHECK_FALSE(fs::exists(out));
  }
}
