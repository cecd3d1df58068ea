// Hugging Face import and export: config mapping and refusals, and for every architecture a tiny random HF
// checkpoint (written by tests/hf_reference.py) imported, run against an independent float64 Python forward pass,
// exported back bit for bit, and re-imported to the same weights.
#include <algorithm>
#include <filesystem>

#include "data/safetensors.h"
#include "models/hf_config.h"
#include "models/hf_weights.h"
#include "models/presets.h"
#include "tests/catch_compat.h"
#include "tests/cli_helpers.h"
#include "tests/export_helpers.h"
#include "tests/fixtures.h"
#include "tests/hf_round_trip.h"
#include "tests/tokenizer_kinds_fixtures.h"
#include "train/checkpoint/checkpoint.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

nlohmann::json tiny_llama_hf() {
  return {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"vocab_size", 97},
          {"hidden_size", 32}, {"intermediate_size", 88}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"max_position_embeddings", 32}, {"rms_norm_eps", 1e-6},
          {"rope_theta", 500000.0}, {"hidden_act", "silu"}, {"tie_word_embeddings", false}};
}

}  // namespace

TEST_CASE("HF configs map onto lmzoo's fields", "[hf]") {
  const auto llama = model_config_from_hf(tiny_llama_hf());
  CHECK(llama.architecture == HfArchitecture::kLlamaForCausalLM);
  CHECK(llama.config.arch == Arch::kGpt);
  CHECK(llama.config.position == Position::kRope);
  CHECK(llama.config.rope_base == 500000.0);
  CHECK(llama.config.kv_heads() == 2);
  CHECK(llama.config.activation == Activation::kSwiglu);
  CHECK(llama.config.norm == NormKind::kRmsNorm);
  CHECK(llama.config.ff_dim() == 88);
  CHECK_FALSE(llama.config.tie_embeddings);
  CHECK_FALSE(llama.config.bias);

  nlohmann::json v5 = tiny_llama_hf();  // transformers 5.x writes the rope settings in rope_parameters
  v5.erase("rope_theta");
  v5["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 250000.0}};
  CHECK(model_config_from_hf(v5).config.rope_base == 250000.0);

  const nlohmann::json gpt2 = {{"architectures", {"GPT2LMHeadModel"}}, {"model_type", "gpt2"}, {"vocab_size", 50257},
                               {"n_positions", 1024}, {"n_embd", 768}, {"n_layer", 12}, {"n_head", 12},
                               {"n_inner", nullptr}, {"activation_function", "gelu_new"}};
  const auto g = model_config_from_hf(gpt2).config;
  CHECK(g.ff_dim() == 3072);
  CHECK(g.activation == Activation::kGeluTanh);
  CHECK(g.bias);
  CHECK(g.tie_embeddings);
  CHECK(g.norm_eps == 1e-5);

  const nlohmann::json t5 = {{"architectures", {"T5ForConditionalGeneration"}}, {"model_type", "t5"},
                             {"vocab_size", 32128}, {"d_model", 512}, {"d_kv", 64}, {"d_ff", 1024},
                             {"num_layers", 8}, {"num_heads", 6}, {"feed_forward_proj", "gated-gelu"},
                             {"tie_word_embeddings", false}};
  const auto t = model_config_from_hf(t5).config;
  CHECK(t.activation == Activation::kGeglu);
  CHECK(t.decoder_layers() == 8);
  CHECK(t.head_size() == 64);
  CHECK(t.attn_dim() == 384);
  CHECK(t.norm == NormKind::kRmsNorm);
}

TEST_CASE("HF configs lmzoo cannot represent are refused naming the field", "[hf]") {
  nlohmann::json scaled = tiny_llama_hf();
  scaled["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
  CHECK(refusal(scaled).find("rope_scaling") != std::string::npos);
  // rope_scaling / rope_parameters in any other form than null or a default-typed object (issue 39): a string or
  // a list was read as unscaled rope.
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    for (const nlohmann::json& odd : {nlohmann::json("linear"), nlohmann::json::array({2.0}), nlohmann::json(2.0),
                                      nlohmann::json({{"type", "linear"}, {"factor", 2.0}}),
                                      nlohmann::json({{"rope_type", 5}})}) {
      nlohmann::json hf = tiny_llama_hf();
      hf[key] = odd;
      INFO(key << " " << odd.dump());
      CHECK(refusal(hf).find(std::string("config.json: ") + key + " " + odd.dump() + " is not supported") !=
            std::string::npos);
    }
  }
  for (const nlohmann::json& plain : {nlohmann::json(nullptr), nlohmann::json({{"rope_type", "default"}}),
                                      nlohmann::json({{"type", "default"}, {"rope_theta", 500000.0}})}) {
    nlohmann::json hf = tiny_llama_hf();
    hf["rope_scaling"] = plain;
    INFO(plain.dump());
    CHECK(refusal(hf).empty());
  }

  nlohmann::json mixed_bias = tiny_llama_hf();
  mixed_bias["attention_bias"] = true;
  CHECK(refusal(mixed_bias).find("attention_bias") != std::string::npos);

  const nlohmann::json bert = {{"architectures", {"BertForMaskedLM"}}, {"model_type", "bert"}, {"vocab_size", 99},
                               {"hidden_size", 32}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                               {"intermediate_size", 64}, {"max_position_embeddings", 32},
                               {"position_embedding_type", "relative_key"}};
  CHECK(refusal(bert).find("position_embedding_type 'relative_key'") != std::string::npos);

  nlohmann::json other = tiny_llama_hf();
  other["architectures"] = {"FalconForCausalLM"};
  CHECK(refusal(other).find("'FalconForCausalLM' is not one of") != std::string::npos);

  nlohmann::json llama3 = tiny_llama_hf();  // Llama 3.1/3.2 frequency scaling: refused by name
  llama3["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                            {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  CHECK(refusal(llama3).find("rope_scaling {\"factor\":32.0") != std::string::npos);
  CHECK(refusal(llama3).find("\"rope_type\":\"llama3\"") != std::string::npos);

  nlohmann::json missing = tiny_llama_hf();
  missing.erase("hidden_size");
  CHECK(refusal(missing) == "config.json has no 'hidden_size'");
}

TEST_CASE("lmzoo configs without a Hugging Face twin are refused with the reason", "[hf]") {
  ModelConfig c;
  c.vocab_size = 100;
  c.position = Position::kAlibi;
  try {
    hf_architecture_of(c);
    FAIL("an alibi gpt has no HF twin");
  } catch (const HfFormatError& e) {
    CHECK(std::string(e.what()).find("learned positions") != std::string::npos);
  }
  c.position = Position::kLearned;
  c.bias = true;
  CHECK(hf_architecture_of(c) == HfArchitecture::kGpt2LMHeadModel);
  c.position = Position::kRope;
  c.norm = NormKind::kRmsNorm;
  c.activation = Activation::kSwiglu;
  c.bias = false;
  CHECK(hf_architecture_of(c) == HfArchitecture::kLlamaForCausalLM);
}

TEST_CASE("the tokenizer's vocabulary fills the HF embedding rows through vocab_multiple", "[hf]") {
  CHECK(vocab_multiple_for(32100, 32128) == 32);  // T5: 32100 tokens, 32128 rows = 1004 * 32 (16: 32112)
  CHECK(vocab_multiple_for(50257, 50257) == 1);
  CHECK(vocab_multiple_for(500, 512) == 16);  // 32 * 16 (8: 504)
  const int64_t odd = vocab_multiple_for(10, 13);
  CHECK((10 + odd - 1) / odd * odd == 13);
  CHECK_THROWS_AS(vocab_multiple_for(600, 512), HfFormatError);
}

TEST_CASE("every lmzoo parameter has its HF tensor, in both directions", "[hf]") {
  nlohmann::json hf = tiny_llama_hf();
  ModelConfig c = model_config_from_hf(hf).config;
  torch::manual_seed(3);
  AnyModel model = build_model(c);
  const auto tensors = hf_tensors_from_model(*model.module(), HfArchitecture::kLlamaForCausalLM, c);
  // 2 per model (embeddings, final norm) + lm_head + 9 per layer (q, k, v, o, gate, up, down, two norms).
  CHECK(tensors.size() == 3 + 9 * 2);
  std::map<std::string, torch::Tensor> by_name(tensors.begin(), tensors.end());
  CHECK(by_name.at("model.layers.1.self_attn.k_proj.weight").sizes() == torch::IntArrayRef({16, 32}));
  torch::manual_seed(4);
  AnyModel other = build_model(c);
  const auto report = load_hf_tensors(*other.module(), HfArchitecture::kLlamaForCausalLM, c, by_name);
  CHECK(report.kept_initial.empty());
  CHECK(report.ignored.empty());
  for (const auto& item : model.module()->named_parameters()) {
    INFO(item.key());
    CHECK(torch::equal(item.value(), other.module()->named_parameters()[item.key()]));
  }
  by_name.erase("model.layers.0.mlp.up_proj.weight");
  try {
    load_hf_tensors(*other.module(), HfArchitecture::kLlamaForCausalLM, c, by_name);
    FAIL("a missing tensor must be refused");
  } catch (const HfFormatError& e) {
    CHECK(std::string(e.what()) ==
          "the checkpoint has no tensor 'model.layers.0.mlp.up_proj.weight', which LlamaForCausalLM needs");
  }
}

TEST_CASE("the Python reference checks itself (safetensors, T5 buckets, causality, torch.nn's encoder layer)",
          "[hf][python]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  TempDir dir;
  const bool passed = run_shell(kReference + " selftest", dir / "selftest.log");
  INFO(read_text(dir / "selftest.log"));
  CHECK(passed);
}

TEST_CASE("imported GPT-2 and Llama match a Python reference and export back bit for bit", "[hf][python]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  for (const char* arch : {"gpt2", "gpt2-legacy", "llama", "llama-sharded"}) round_trip(arch);
}

TEST_CASE("imported BERT models match a Python reference and export back bit for bit", "[hf][python]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  for (const char* arch : {"bert-mlm", "bert-legacy", "bert-model", "bert-cls"}) round_trip(arch);
}

TEST_CASE("imported T5 v1.0 and v1.1 match a Python reference and export back bit for bit", "[hf][python]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  for (const char* arch : {"t5-v1_0", "t5-v1_1"}) round_trip(arch);
}

namespace {

// Every parameter of CHECKPOINT (names under PREFIX) within 1e-8 of the same parameter of IMPORTED.
void check_started_from(const std::string& checkpoint, const std::string& imported, const std::string& prefix = "") {
  const auto trained = load_model(read_checkpoint(checkpoint), torch::kCPU).module()->named_parameters();
  const auto start = load_model(read_checkpoint(imported), torch::kCPU).module()->named_parameters();
  for (const auto& item : start) {
    INFO(item.key());
    const torch::Tensor* p = trained.find(prefix + item.key());
    REQUIRE(p != nullptr);
    CHECK((*p - item.value()).abs().max().item<double>() < 1e-8);
  }
}

}  // namespace

TEST_CASE("train --init continues an imported model with its family's objectives", "[hf][python]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  const Fixture& corpus = tiny_corpus();
  TempDir dir;
  write_text(dir / "labels.tsv", "text\tlabel\ngood day\tpos\nbad day\tneg\nfine work\tpos\nawful\tneg\n");
  // A learning rate of 1e-12 leaves the weights where they started: the imported ones, not a fresh init.
  const std::string still = " --steps 2 --batch-size 2 --lr 1e-12 --min-lr 1e-12 --warmup 0";
  struct Case {
    const char* arch;
    const char* objective;
  };
  for (const Case& c : {Case{"gpt2", "causal"}, Case{"llama", "prefix"}, Case{"qwen2", "causal"},
                        Case{"mistral", "prefix"}, Case{"bert-mlm", "mlm"},
                        Case{"t5-v1_1", "span"}, Case{"t5-v1_0", ""}}) {
    INFO(c.arch << " " << c.objective);
    const std::string hf = dir / (std::string("hf_") + c.arch), ckpt = dir / (std::string("ck_") + c.arch);
    REQUIRE(run_shell(kReference + " make " + c.arch + " " + hf + " --vocab " + std::to_string(corpus.vocab_size),
                      dir / "make.log"));
    REQUIRE(run_cli("import " + hf + " --out " + ckpt + " --tokenizer " + corpus.tokenizer_dir).exit_code == 0);
    const std::string run = dir / (std::string("run_") + c.arch);
    const std::string objective = *c.objective ? std::string(" --objective ") + c.objective : "";
    auto trained = run_cli("train --init " + ckpt + " --data " + corpus.data_dir + objective + still +
                           " --eval-iters 1 --out " + run);
    INFO(trained.out << trained.err);
    REQUIRE(trained.exit_code == 0);
    check_started_from(run + "/last", ckpt);
  }
  // A bert becomes a classifier on a labelled file: its encoder starts from the import.
  const std::string cls = dir / "run_cls";
  auto classified = run_cli("train --init " + (dir / "ck_bert-mlm") + " --data " + (dir / "labels.tsv") + still +
                            " --out " + cls);
  INFO(classified.out << classified.err);
  REQUIRE(classified.exit_code == 0);
  check_started_from(cls + "/last", dir / "ck_bert-mlm", "bert.");

  auto reshaped = run_cli("train --init " + (dir / "ck_gpt2") + " --data " + corpus.data_dir + " --n-layer 3 --out " +
                          (dir / "bad"));
  CHECK(reshaped.exit_code == 2);
  CHECK(reshaped.err.find("--n-layer cannot change the shape of the --init model") != std::string::npos);
}

TEST_CASE("presets marked with an HF twin map onto that architecture and back", "[hf][presets]") {
  int twins = 0;
  for (const auto& preset : all_presets()) {
    INFO(preset.name);
    if (preset.hf_twin.empty()) continue;
    ++twins;
    ModelConfig c = preset.config;
    const HfArchitecture a = hf_architecture_of(c);
    const auto back = model_config_from_hf(hf_config_from_model(c, a, {}));
    CHECK(back.architecture == a);
    back.config.validate();
    // The HF config says everything the shape needs: the same model comes back (dropout and init aside), with
    // the sizes lmzoo derives (d_ff, head size, decoder layers, kv heads) spelled out.
    auto spelled_out = [](ModelConfig m) {
      m.d_ff = m.ff_dim();
      m.head_dim = m.head_size();
      m.n_decoder_layer = m.arch == Arch::kT5 ? m.decoder_layers() : 0;
      m.n_kv_heads = m.kv_heads();
      m.dropout = 0;
      m.init = InitScheme::kGpt2;
      return nlohmann::json(m);
    };
    CHECK(spelled_out(back.config) == spelled_out(c));
  }
  CHECK(twins == 28);  // 19 + smollm2-135m/360m, qwen2.5-0.5b, mistral-7b, pythia-70m/160m/410m, roberta-base,
                      // distilbert-base
}

namespace {

// Writes a tiny random HF checkpoint of ARCH sized to the tokenizer in TOKENIZER_DIR, with that tokenizer's files
// beside it, and imports it; returns the checkpoint directory.
std::string import_with_tokenizer(const TempDir& dir, const std::string& arch, const std::string& tokenizer_dir) {
  const Tokenizer tokenizer = Tokenizer::load(tokenizer_dir);
  const std::string hf = dir / ("hf_" + arch), ckpt = dir / ("ck_" + arch);
  REQUIRE(run_shell(kReference + " make " + arch + " " + hf + " --vocab " + std::to_string(tokenizer.vocab_size()),
                    dir / "make.log"));
  for (const auto& item : tokenizer.files()) write_text(std::filesystem::path(hf) / item.first, item.second);
  auto imported = run_cli("import " + hf + " --out " + ckpt);
  INFO(imported.out << imported.err);
  REQUIRE(imported.exit_code == 0);
  return ckpt;
}

nlohmann::json read_json_file(const std::string& path) { return nlohmann::json::parse(read_text(path)); }

// `lmzoo generate` from CKPT with ARGS (prompt and length) must succeed; then CKPT is exported to DIR/back, whose
// config.json is returned.
nlohmann::json generate_then_export(const std::string& ckpt, const std::string& args, const TempDir& dir) {
  auto generated = run_cli("generate --checkpoint " + ckpt + " " + args);
  INFO(generated.out << generated.err);
  CHECK(generated.exit_code == 0);
  REQUIRE(run_cli("export --checkpoint " + ckpt + " --format hf --out " + (dir / "back")).exit_code == 0);
  return read_json_file(dir / "back/config.json");
}

// The exported tokenizer.json alone (DIR/back/tokenizer.json) gives the ids of the SentencePiece model in SPM_DIR
// on a text with spaces, a sentinel or control-free words and an out-of-vocabulary character.
void check_exported_tokenizer_json(const TempDir& dir, const std::string& spm_dir) {
  const std::filesystem::path only_json = dir.path / "only-json";
  std::filesystem::create_directories(only_json);
  std::filesystem::copy_file(dir.path / "back/tokenizer.json", only_json / "tokenizer.json");
  write_text(dir / "texts.jsonl", "\"the cat  sat <extra_id_0> on\"\n\" mat \\u00e9\\u4e2d!\"\n");
  const auto from_model = run_cli("tokenizer encode --jsonl --tokenizer " + spm_dir, dir / "texts.jsonl");
  const auto from_json = run_cli("tokenizer encode --jsonl --tokenizer " + only_json.string(), dir / "texts.jsonl");
  INFO(from_model.err << from_json.err);
  REQUIRE(from_model.exit_code == 0);
  REQUIRE(from_json.exit_code == 0);
  CHECK(from_json.out == from_model.out);
  CHECK(std::count(from_model.out.begin(), from_model.out.end(), '\n') == 2);
}

}  // namespace

TEST_CASE("imports carry their tokenizers: GPT-2 BPE, WordPiece, T5 and Llama SentencePiece", "[hf][python]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  TempDir dir;
  SECTION("BERT with a WordPiece vocab.txt fills masks and exports vocab.txt back") {
    const std::filesystem::path vocab = dir.path / "wordpiece";
    std::filesystem::create_directories(vocab);
    write_bert_vocab(vocab, /*cased=*/false);
    const std::string ckpt = import_with_tokenizer(dir, "bert-mlm", vocab.string());
    const auto config = generate_then_export(ckpt, "--prompt 'the cat [MASK] on the mat.'", dir);  // fills masks
    CHECK(read_text(dir / "back/vocab.txt") == read_text(vocab / "vocab.txt"));
    CHECK(config["pad_token_id"] == 0);  // [PAD]
  }
  SECTION("T5 with a spiece.model: pad 0, eos 1, sentinels on top") {
    const std::filesystem::path spm = dir.path / "t5tok";
    std::filesystem::create_directories(spm);
    write_text(spm / "spiece.model", train_hf_spm(SpmStyle::kT5));
    const std::string ckpt = import_with_tokenizer(dir, "t5-v1_1", spm.string());
    const Tokenizer tokenizer = Tokenizer::from_serialized(read_checkpoint(ckpt).tokenizer_model);
    CHECK(tokenizer.special().pad == 0);
    CHECK(tokenizer.special().eos == 1);
    CHECK(tokenizer.special().sentinels.front() == tokenizer.vocab_size() - 1);
    const auto config = generate_then_export(ckpt, "--prompt 'the cat sat' --max-new-tokens 4", dir);
    CHECK(config["pad_token_id"] == 0);
    CHECK(config["eos_token_id"] == 1);
    CHECK(config["decoder_start_token_id"] == 0);
    CHECK(read_text(dir / "back/spiece.model") == read_text(spm / "spiece.model"));
    check_exported_tokenizer_json(dir, spm.string());
  }
  SECTION("Llama with a tokenizer.model: bos 1, eos 2") {
    const std::filesystem::path spm = dir.path / "llamatok";
    std::filesystem::create_directories(spm);
    write_text(spm / "tokenizer.model", train_hf_spm(SpmStyle::kLlama));
    const std::string ckpt = import_with_tokenizer(dir, "llama", spm.string());
    const auto config = generate_then_export(ckpt, "--prompt 'the cat sat' --max-new-tokens 4", dir);
    CHECK(config["bos_token_id"] == 1);
    CHECK(config["eos_token_id"] == 2);
    CHECK_FALSE(config.contains("pad_token_id"));
    check_exported_tokenizer_json(dir, spm.string());
  }
  SECTION("GPT-2 with its real vocabulary: GPT-2's ids, vocab.json and merges.txt back") {
    const std::string gpt2 = gpt2_vocab_dir();
    if (gpt2.empty()) {
      WARN("skipped: no GPT-2 vocabulary (run tools/fetch_gpt2_vocab.sh or set LMZOO_GPT2_ENCODER_DIR)");
      return;
    }
    const std::string ckpt = import_with_tokenizer(dir, "gpt2", gpt2);
    write_text(dir / "hello.txt", "Hello world");
    auto encoded = run_cli("tokenizer encode --ids --tokenizer " + ckpt, dir / "hello.txt");
    CHECK(encoded.out == "15496 995\n");  // GPT-2's ids of "Hello" and " world"
    const auto config = generate_then_export(ckpt, "--prompt 'Hello' --max-new-tokens 4", dir);
    CHECK(config["eos_token_id"] == 50256);  // <|endoftext|>
    CHECK(nlohmann::json::parse(read_text(dir / "back/vocab.json")).size() == 50257);
    CHECK(read_text(dir / "back/merges.txt").rfind("#version", 0) == 0);
  }
}

TEST_CASE("T5's head as transformers 4 and 5 write it: scale_decoder_outputs beside tie_word_embeddings", "[hf]") {
  nlohmann::json t5 = {{"architectures", {"T5ForConditionalGeneration"}}, {"model_type", "t5"}, {"vocab_size", 99},
                       {"d_model", 32}, {"d_kv", 8}, {"d_ff", 64}, {"num_layers", 2}, {"num_heads", 4},
                       {"feed_forward_proj", "gated-gelu"}};
  const auto read = [&](const nlohmann::json& changes) {
    nlohmann::json j = t5;
    j.update(changes);
    return model_config_from_hf(j);
  };
  // 4.x: tied means scaled. 5.x: scale_decoder_outputs says, and a tied, unscaled v1.1 becomes lmzoo's untied one.
  CHECK(read(nlohmann::json::object()).config.tie_embeddings);
  CHECK_FALSE(read({{"tie_word_embeddings", false}}).config.tie_embeddings);
  const auto v5 = read({{"tie_word_embeddings", true}, {"scale_decoder_outputs", false}});
  CHECK_FALSE(v5.config.tie_embeddings);
  CHECK(v5.lm_head_from_shared);
  CHECK_FALSE(read({{"tie_word_embeddings", false}, {"scale_decoder_outputs", false}}).lm_head_from_shared);
  CHECK(read({{"scale_decoder_outputs", true}}).config.tie_embeddings);
  nlohmann::json scaled_untied = t5;
  scaled_untied.update({{"tie_word_embeddings", false}, {"scale_decoder_outputs", true}});
  CHECK(refusal(scaled_untied).find("scale_decoder_outputs true with tie_word_embeddings false") != std::string::npos);
  // Written with both keys, in agreement, and read back the same.
  for (bool tied : {true, false}) {
    ModelConfig c = read({{"tie_word_embeddings", tied}}).config;
    const nlohmann::json written = hf_config_from_model(c, hf_architecture_of(c), {});
    CHECK(written["tie_word_embeddings"] == tied);
    CHECK(written["scale_decoder_outputs"] == tied);
    CHECK(model_config_from_hf(written).config.tie_embeddings == tied);
  }
}

TEST_CASE("a T5 v1.1 saved as transformers 5 saves it imports as the same model as its 4.x twin", "[hf][python]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  const Fixture& corpus = tiny_corpus();
  TempDir dir;
  REQUIRE(run_shell(kReference + " make t5-v1_1 " + (dir / "made") + " --vocab " + std::to_string(corpus.vocab_size),
                    dir / "make.log"));
  auto tensors = load_safetensors_dir(dir / "made");
  REQUIRE(tensors.count("lm_head.weight"));
  tensors["lm_head.weight"] = tensors.at("shared.weight").clone();  // the model 5.x holds: lm_head is shared
  nlohmann::json config = nlohmann::json::parse(read_text(dir / "made/config.json"));
  REQUIRE(config["tie_word_embeddings"] == false);
  // 4.x's file: untied, lm_head.weight written. 5.x's: tied, unscaled, no lm_head.weight.
  for (const bool v5 : {false, true}) {
    const std::string hf = dir / (v5 ? "v5" : "v4");
    std::filesystem::create_directories(hf);
    std::vector<std::pair<std::string, torch::Tensor>> written;
    for (const auto& [name, t] : tensors) {
      if (!(v5 && name == "lm_head.weight")) written.emplace_back(name, t);
    }
    write_safetensors(hf + "/model.safetensors", written, {{"format", "pt"}});
    nlohmann::json c = config;
    if (v5) c.update({{"tie_word_embeddings", true}, {"scale_decoder_outputs", false}});
    write_text(hf + "/config.json", c.dump());
    const auto imported = run_cli("import " + hf + " --out " + (dir / (v5 ? "ck5" : "ck4")) + " --tokenizer " +
                                  corpus.tokenizer_dir);
    INFO(imported.err);
    REQUIRE(imported.exit_code == 0);
  }
  check_same_weights(dir / "ck4", dir / "ck5");
  CHECK(nlohmann::json(read_checkpoint(dir / "ck4").model) == nlohmann::json(read_checkpoint(dir / "ck5").model));
}
