// GPT-NeoX (Pythia) through Hugging Face: config mapping and refusals, the per-head query_key_value layout, the
// Pythia presets' published counts, and tiny random checkpoints (tests/hf_reference.py: parallel residual with
// rotary_pct 0.25, sequential with rotary_pct 1) against a float64 Python forward pass, exported back bit for bit,
// decoded greedily as the reference does, fine-tuned, and refused when broken. The tokenizer: a GPT-NeoX-style
// byte-level BPE tokenizer.json alone, built here.
#include <cmath>
#include <filesystem>
#include <numeric>
#include <sstream>

#include "data/safetensors.h"
#include "data/tokenizers/tokenizer.h"
#include "models/gpt.h"
#include "models/hf_config.h"
#include "models/hf_weights.h"
#include "models/parameter_sizes.h"
#include "models/presets.h"
#include "tests/catch_compat.h"
#include "tests/cli_helpers.h"
#include "tests/export_helpers.h"
#include "tests/fixtures.h"
#include "tests/hf_round_trip.h"
#include "train/checkpoint/checkpoint.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

// Pythia-70m's config.json as the hub serves it (transformers 4.24 fields).
nlohmann::json pythia_70m_hf() {
  return {{"architectures", {"GPTNeoXForCausalLM"}}, {"bos_token_id", 0}, {"eos_token_id", 0},
          {"hidden_act", "gelu"}, {"hidden_size", 512}, {"initializer_range", 0.02}, {"intermediate_size", 2048},
          {"layer_norm_eps", 1e-5}, {"max_position_embeddings", 2048}, {"model_type", "gpt_neox"},
          {"num_attention_heads", 8}, {"num_hidden_layers", 6}, {"rotary_emb_base", 10000}, {"rotary_pct", 0.25},
          {"tie_word_embeddings", false}, {"torch_dtype", "float16"}, {"transformers_version", "4.24.0"},
          {"use_cache", true}, {"use_parallel_residual", true}, {"vocab_size", 50304}};
}

// A tiny GPT-NeoX config (head size 16).
nlohmann::json tiny_neox_hf() {
  nlohmann::json j = pythia_70m_hf();
  j.update({{"hidden_size", 48}, {"num_attention_heads", 3}, {"num_hidden_layers", 2}, {"intermediate_size", 80},
            {"max_position_embeddings", 64}, {"vocab_size", 97}});
  return j;
}

// The HF config says everything the shape needs: the sizes lmzoo derives spelled out, dropout and init aside.
nlohmann::json spelled_out(ModelConfig m) {
  m.d_ff = m.ff_dim();
  m.head_dim = m.head_size();
  m.n_kv_heads = m.kv_heads();
  m.dropout = 0;
  m.init = InitScheme::kGpt2;
  return nlohmann::json(m);
}

// A GPT-NeoX-style tokenizer.json (Pythia's pipeline: NFC, byte-level pre-tokenizer, post-processor and decoder,
// BPE): <|endoftext|> 0 and <|padding|> 1, the printable ASCII bytes and space/newline as byte-level characters,
// and a few merges.
std::string neox_tokenizer_json() {
  nlohmann::json vocab = nlohmann::json::object();
  int id = 0;
  vocab["<|endoftext|>"] = id++;
  vocab["<|padding|>"] = id++;
  for (char c = '!'; c <= '~'; ++c) vocab[std::string(1, c)] = id++;
  const std::string space = "\xC4\xA0", newline = "\xC4\x8A";  // byte-level 'Ġ' (0x20) and 'Ċ' (0x0A)
  vocab[space] = id++;
  vocab[newline] = id++;
  const std::vector<std::pair<std::string, std::string>> merges = {
      {space, "t"}, {"h", "e"}, {space + "t", "he"}, {space, "c"}, {"a", "t"}, {space + "c", "at"},
      {space, "s"}, {space + "s", "at"}, {space, "m"}, {space + "m", "at"}};
  nlohmann::json merge_list = nlohmann::json::array();
  for (const auto& [a, b] : merges) {
    if (!vocab.contains(a + b)) vocab[a + b] = id++;
    merge_list.push_back(a + " " + b);
  }
  auto added = [](int token_id, const std::string& content) {
    return nlohmann::json{{"id", token_id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                          {"rstrip", false}, {"normalized", false}, {"special", true}};
  };
  const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                                     {"use_regex", true}};
  const nlohmann::json j = {
      {"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr},
      {"added_tokens", {added(0, "<|endoftext|>"), added(1, "<|padding|>")}},
      {"normalizer", {{"type", "NFC"}}}, {"pre_tokenizer", byte_level}, {"post_processor", byte_level},
      {"decoder", byte_level},
      {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
                 {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"vocab", vocab},
                 {"merges", merge_list}}}};
  return j.dump(2);
}

// Writes the tiny HF checkpoint ARCH to DIR/hf (vocabulary VOCAB rows) and returns its path.
std::string make_hf(const TempDir& dir, const std::string& arch, int64_t vocab, const std::string& name = "hf") {
  const std::string hf = dir / name;
  REQUIRE(run_shell(kReference + " make " + arch + " " + hf + " --vocab " + std::to_string(vocab), dir / "make.log"));
  return hf;
}

// Logits of lmzoo's own forward pass (the training path, fused CPU attention) vs the Python reference's.
double max_diff_to_reference(const std::string& arch, const std::string& hf, const std::string& ckpt,
                             const TempDir& dir) {
  const std::string ids = R"({"input_ids": [[5, 17, 42, 96, 0, 33, 71, 8, 9, 10, 11], [1, 2, 3, 4, 5, 6, 7, 8, 60, 61, 62]]})";
  write_text(dir / "ids.json", ids);
  REQUIRE(run_shell(kReference + " logits " + arch + " " + hf + " " + (dir / "ids.json"), dir / "logits.json"));
  const auto expected = nlohmann::json::parse(read_text(dir / "logits.json"))["logits"];
  AnyModel model = load_model(read_checkpoint(ckpt), torch::kCPU);
  model.module()->eval();
  torch::NoGradGuard no_grad;
  const auto input = torch::tensor(std::vector<int64_t>{5, 17, 42, 96, 0, 33, 71, 8, 9, 10, 11, 1, 2, 3, 4, 5, 6, 7, 8,
                                                        60, 61, 62})
                         .view({2, 11});
  const auto logits = model.as<GPT>()->forward(input);  // (2, 11, padded vocab)
  double worst = 0;
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t t = 0; t < 11; ++t) {
      const auto& row = expected[b][t];
      for (size_t v = 0; v < row.size(); ++v) {
        worst = std::max(worst, std::abs(row[v].get<double>() - logits[b][t][int64_t(v)].item<double>()));
      }
    }
  }
  return worst;
}

// EXIT_CODE: 2 for a config.json field lmzoo does not implement (as a bad flag), 1 for damaged or mismatched weights.
bool import_refused(const TempDir& dir, const std::string& hf, const std::string& expected_text, int exit_code) {
  const std::string out = dir / "refused";
  auto imported = run_cli("import " + hf + " --out " + out + " --tokenizer " + tiny_corpus().tokenizer_dir);
  INFO(imported.out << imported.err);
  CHECK(imported.exit_code == exit_code);
  CHECK(count_lines(imported.err) == 1);
  CHECK_FALSE(std::filesystem::exists(out));
  return imported.err.find(expected_text) != std::string::npos;
}

void write_hf_config(const std::string& hf, const nlohmann::json& j) {
  write_text(std::filesystem::path(hf) / "config.json", j.dump(2) + "\n");
}

nlohmann::json read_hf_config(const std::string& hf) {
  return nlohmann::json::parse(read_text(std::filesystem::path(hf) / "config.json"));
}

}  // namespace

TEST_CASE("GPT-NeoX configs map onto lmzoo's fields", "[hf][gpt_neox]") {
  const auto d = model_config_from_hf(pythia_70m_hf());
  CHECK(d.architecture == HfArchitecture::kGptNeoXForCausalLM);
  const ModelConfig& c = d.config;
  CHECK(c.arch == Arch::kGpt);
  CHECK(c.position == Position::kRope);
  CHECK(c.rope_fraction == 0.25);
  CHECK(c.rope_base == 10000.0);
  CHECK(c.parallel_residual);
  CHECK(c.norm == NormKind::kLayerNorm);
  CHECK(c.norm_position == NormPosition::kPre);
  CHECK(c.bias);
  CHECK_FALSE(c.tie_embeddings);
  CHECK(c.activation == Activation::kGelu);
  CHECK(c.ff_dim() == 2048);
  CHECK(c.max_seq_len == 2048);
  CHECK(c.dropout == 0.0);
  CHECK(spelled_out(c) == spelled_out(find_preset("pythia-70m").config));

  // Defaults: rotary_pct 0.25, parallel residual, untied, as GPTNeoXConfig's.
  nlohmann::json bare = tiny_neox_hf();
  for (const char* key : {"rotary_pct", "rotary_emb_base", "use_parallel_residual", "tie_word_embeddings"}) {
    bare.erase(key);
  }
  const auto b = model_config_from_hf(bare).config;
  CHECK(b.rope_fraction == 0.25);
  CHECK(b.rope_base == 10000.0);
  CHECK(b.parallel_residual);
  CHECK_FALSE(b.tie_embeddings);

  // transformers 4.48 writes rope_theta and partial_rotary_factor beside them; equal values read the same.
  nlohmann::json v448 = tiny_neox_hf();
  v448.update({{"rope_theta", 10000}, {"partial_rotary_factor", 0.25}, {"rope_scaling", nullptr},
               {"attention_bias", true}, {"use_parallel_residual", false}, {"rotary_pct", 0.25},
               {"hidden_dropout", 0.1}, {"attention_dropout", 0.2}});
  const auto v = model_config_from_hf(v448);
  CHECK_FALSE(v.config.parallel_residual);
  CHECK(v.config.dropout == 0.1);
  REQUIRE(v.notes.size() == 1);
  CHECK(v.notes[0].find("attention_dropout") != std::string::npos);

  // Written back: the same model comes back.
  const auto back = model_config_from_hf(hf_config_from_model(c, hf_architecture_of(c), {}));
  CHECK(back.architecture == HfArchitecture::kGptNeoXForCausalLM);
  CHECK(spelled_out(back.config) == spelled_out(c));
}

TEST_CASE("GPT-NeoX configs lmzoo cannot represent are refused naming the field", "[hf][gpt_neox]") {
  auto with = [](const nlohmann::json& changes) {
    nlohmann::json j = tiny_neox_hf();
    j.update(changes);
    return refusal(j);
  };
  // Head size 16: 0.3 gives 4.8 dimensions, 0.1875 gives 3 (odd); 0 rotates nothing.
  CHECK(with({{"rotary_pct", 0.3}}).find("rotary_pct 0.3 of head size 16 gives 4.8") != std::string::npos);
  CHECK(with({{"rotary_pct", 0.1875}}).find("rotary_pct 0.1875") != std::string::npos);
  CHECK(with({{"rotary_pct", 0.0}}).find("rotary_pct 0.0") != std::string::npos);
  CHECK(with({{"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}}}).find("rope_scaling") != std::string::npos);
  CHECK(with({{"rope_theta", 500000}}).find("rope_theta 500000 differs from rotary_emb_base 10000") !=
        std::string::npos);
  CHECK(with({{"partial_rotary_factor", 0.5}}).find("partial_rotary_factor") != std::string::npos);
  CHECK(with({{"attention_bias", false}}).find("attention_bias false") != std::string::npos);
  CHECK(with({{"hidden_act", "gelu_10"}}).find("hidden_act 'gelu_10'") != std::string::npos);
  CHECK(with({{"rope_parameters", {{"rope_type", "yarn"}}}}).find("rope_parameters") != std::string::npos);
  CHECK(with({{"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 500}}}})
            .find("rope_parameters.rope_theta 500 differs from rotary_emb_base 10000") != std::string::npos);
}

TEST_CASE("GPT-NeoX as transformers 5 writes it: rope_parameters alone", "[hf][gpt_neox]") {
  // 5.x writes neither rotary_pct nor rotary_emb_base (nor 4.x's rope_theta / partial_rotary_factor).
  nlohmann::json j = tiny_neox_hf();
  for (const char* key : {"rotary_pct", "rotary_emb_base", "rope_theta", "partial_rotary_factor", "rope_scaling"}) {
    j.erase(key);
  }
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500}, {"partial_rotary_factor", 1.0}};
  const auto read = model_config_from_hf(j);
  CHECK(read.config.rope_base == 500);
  CHECK(read.config.rope_fraction == 1.0);
  // Written back with every spelling, in agreement: read again, the same model.
  const nlohmann::json written = hf_config_from_model(read.config, read.architecture, {});
  CHECK(written["rotary_emb_base"] == 500);
  CHECK(written["rope_parameters"]["rope_theta"] == 500);
  CHECK(written["rope_parameters"]["partial_rotary_factor"] == 1.0);
  CHECK(spelled_out(model_config_from_hf(written).config) == spelled_out(read.config));
  nlohmann::json unnamed = tiny_neox_hf();
  unnamed.erase("architectures");
  CHECK(model_config_from_hf(unnamed).architecture == HfArchitecture::kGptNeoXForCausalLM);  // from model_type
}

TEST_CASE("gpts with GPT-NeoX's switches map onto GPTNeoXForCausalLM; Llama and GPT-2 keep theirs", "[hf][gpt_neox]") {
  ModelConfig c;
  c.vocab_size = 100;
  c.bias = true;
  c.position = Position::kRope;  // LayerNorm, gelu, rope over whole heads
  CHECK(hf_architecture_of(c) == HfArchitecture::kGptNeoXForCausalLM);
  c.rope_fraction = 0.25;
  c.parallel_residual = true;
  CHECK(hf_architecture_of(c) == HfArchitecture::kGptNeoXForCausalLM);
  c.position = Position::kLearned;  // parallel residual without rope: GPT-NeoX would be its only twin
  c.rope_fraction = 1.0;
  CHECK(twin_refusal(c).find("GPT-NeoX needs rope positions, not learned") != std::string::npos);
  c.parallel_residual = false;
  CHECK(hf_architecture_of(c) == HfArchitecture::kGpt2LMHeadModel);
  c.position = Position::kRope;
  c.bias = false;
  CHECK(twin_refusal(c).find("GPT-NeoX needs biases") != std::string::npos);
  c.norm = NormKind::kRmsNorm;
  c.activation = Activation::kSwiglu;
  CHECK(hf_architecture_of(c) == HfArchitecture::kLlamaForCausalLM);
  c.rope_fraction = 0.5;
  CHECK(twin_refusal(c).find("Llama needs rope over whole heads") != std::string::npos);
}

TEST_CASE("GPT-NeoX's query_key_value is regrouped per head, both ways and exactly", "[hf][gpt_neox]") {
  ModelConfig c = model_config_from_hf(tiny_neox_hf()).config;
  torch::manual_seed(5);
  AnyModel model = build_model(c);
  const auto tensors = hf_tensors_from_model(*model.module(), HfArchitecture::kGptNeoXForCausalLM, c);
  // embed_in, final norm (2), embed_out + 12 per layer (2 norms x 2, qkv x 2, dense x 2, two mlp linears x 2).
  CHECK(tensors.size() == 4 + 12 * 2);
  std::map<std::string, torch::Tensor> by_name(tensors.begin(), tensors.end());
  const int64_t hs = 16, d = 48;
  const auto qkv = by_name.at("gpt_neox.layers.1.attention.query_key_value.weight");  // (3d, d)
  const auto qkv_bias = by_name.at("gpt_neox.layers.1.attention.query_key_value.bias");
  const auto params = model.module()->named_parameters();
  const auto c_attn = params["h.1.attn.c_attn.weight"], c_attn_bias = params["h.1.attn.c_attn.bias"];  // [q; k; v]
  for (int64_t h = 0; h < 3; ++h) {
    for (int64_t part = 0; part < 3; ++part) {  // q, k, v of head h: HF rows (h, part), lmzoo rows (part, h)
      INFO("head " << h << " part " << part);
      const int64_t hf_row = (3 * h + part) * hs, lmzoo_row = part * d + h * hs;
      CHECK(torch::equal(qkv.slice(0, hf_row, hf_row + hs), c_attn.slice(0, lmzoo_row, lmzoo_row + hs)));
      CHECK(torch::equal(qkv_bias.slice(0, hf_row, hf_row + hs), c_attn_bias.slice(0, lmzoo_row, lmzoo_row + hs)));
    }
  }
  torch::manual_seed(6);
  AnyModel other = build_model(c);
  const auto report = load_hf_tensors(*other.module(), HfArchitecture::kGptNeoXForCausalLM, c, by_name);
  CHECK(report.kept_initial.empty());
  CHECK(report.ignored.empty());
  for (const auto& item : params) {
    INFO(item.key());
    CHECK(torch::equal(item.value(), other.module()->named_parameters()[item.key()]));
  }
  // Old files' buffers are ignored; a GPTNeoXModel's names (no "gpt_neox.") read the same.
  auto legacy = by_name;
  legacy["gpt_neox.layers.0.attention.bias"] = torch::ones({1, 1, 64, 64}, torch::kBool);
  legacy["gpt_neox.layers.0.attention.masked_bias"] = torch::tensor(-1e9);
  legacy["gpt_neox.layers.0.attention.rotary_emb.inv_freq"] = torch::ones({2});
  legacy["layers.0.mlp.dense_h_to_4h.weight"] = legacy.at("gpt_neox.layers.0.mlp.dense_h_to_4h.weight");
  legacy.erase("gpt_neox.layers.0.mlp.dense_h_to_4h.weight");
  CHECK(load_hf_tensors(*other.module(), HfArchitecture::kGptNeoXForCausalLM, c, legacy).ignored.size() == 3);

  auto missing = by_name;
  missing.erase("gpt_neox.layers.1.attention.dense.bias");
  try {
    load_hf_tensors(*other.module(), HfArchitecture::kGptNeoXForCausalLM, c, missing);
    FAIL("a missing tensor must be refused");
  } catch (const HfFormatError& e) {
    CHECK(std::string(e.what()) ==
          "the checkpoint has no tensor 'gpt_neox.layers.1.attention.dense.bias', which GPTNeoXForCausalLM needs");
  }
  auto wrong = by_name;
  wrong["gpt_neox.layers.0.attention.query_key_value.weight"] = torch::zeros({3 * d, d + 1});
  try {
    load_hf_tensors(*other.module(), HfArchitecture::kGptNeoXForCausalLM, c, wrong);
    FAIL("a wrong shape must be refused");
  } catch (const HfFormatError& e) {
    CHECK(std::string(e.what()).find("tensor 'gpt_neox.layers.0.attention.query_key_value.weight' has shape [144, 49]") !=
          std::string::npos);
  }
}

TEST_CASE("Pythia presets have their published parameter counts and a GPT-NeoX twin", "[hf][presets][gpt_neox]") {
  const std::pair<const char*, int64_t> published[] = {
      {"pythia-70m", 70426624}, {"pythia-160m", 162322944}, {"pythia-410m", 405334016}};
  for (const auto& [name, count] : published) {
    INFO(name);
    const ModelConfig c = find_preset(name).config;
    CHECK(parameter_count(c) == count);
    CHECK(find_preset(name).hf_twin == std::string("EleutherAI/") + name);
    REQUIRE(hf_architecture_of(c) == HfArchitecture::kGptNeoXForCausalLM);
    const nlohmann::json hf = hf_config_from_model(c, HfArchitecture::kGptNeoXForCausalLM, {});
    CHECK(hf["rotary_pct"] == 0.25);
    CHECK(hf["use_parallel_residual"] == true);
    CHECK(hf["tie_word_embeddings"] == false);
    const auto back = model_config_from_hf(hf);
    CHECK(back.architecture == HfArchitecture::kGptNeoXForCausalLM);
    CHECK(spelled_out(back.config) == spelled_out(c));
  }
  // pythia-70m by hand: per layer 2 LayerNorms (2 x 1024), qkv 3 * 512 * 513, dense 512 * 513, mlp 2048 * 513 +
  // 512 * 2049; final LayerNorm 1024; embed_in and embed_out 50304 * 512 each.
  const int64_t layer = 2 * 1024 + 3 * 512 * 513 + 512 * 513 + 2048 * 513 + 512 * 2049;
  CHECK(6 * layer + 1024 + 2 * 50304 * 512 == 70426624);
}

namespace {

// make ARCH -> import -> lmzoo's forward and its TorchScript export vs the Python reference -> export --format hf ->
// the same bytes and config fields as the source -> import again -> the same weights.
void check_round_trip(const std::string& arch) {
  const Fixture& corpus = tiny_corpus();
  INFO(arch);
  TempDir dir;
  const std::string hf = make_hf(dir, arch, corpus.vocab_size), ckpt = dir / "ckpt", back = dir / "back";
  auto imported = run_cli("import " + hf + " --out " + ckpt + " --tokenizer " + corpus.tokenizer_dir);
  INFO(imported.out << imported.err);
  REQUIRE(imported.exit_code == 0);
  const ModelConfig c = read_checkpoint(ckpt).model;
  CHECK(c.parallel_residual == (arch == "gpt-neox"));
  CHECK(c.rope_fraction == (arch == "gpt-neox" ? 0.25 : 1.0));

  const double diff = max_diff_to_reference(arch, hf, ckpt, dir);
  INFO("lmzoo forward max |diff| " << diff);
  CHECK(diff < 1e-5);
  REQUIRE(run_cli("export --checkpoint " + ckpt + " --out " + (dir / "model.pt")).exit_code == 0);
  const bool close = run_shell(kReference + " compare " + arch + " " + hf + " " + (dir / "model.pt") + " " +
                                   (dir / "ids.json") + " --tol 1e-5",
                               dir / "compare.log");
  INFO(read_text(dir / "compare.log"));
  CHECK(close);

  export_back_bit_for_bit(ckpt, hf, back, dir / "again", dir.path.string());
  const nlohmann::json written = read_hf_config(back), source = read_hf_config(hf);
  CHECK(written["architectures"] == nlohmann::json::array({"GPTNeoXForCausalLM"}));
  for (const char* key : {"model_type", "hidden_size", "num_hidden_layers", "num_attention_heads",
                          "intermediate_size", "hidden_act", "rotary_pct", "rotary_emb_base", "layer_norm_eps",
                          "max_position_embeddings", "use_parallel_residual", "tie_word_embeddings"}) {
    INFO(key);
    CHECK(written[key] == source[key]);
  }
}

// A GPT-NeoX-style tokenizer.json as the only tokenizer file of a tiny ARCH checkpoint: imported, `lmzoo generate
// --temperature 0` (KV-cache decoding) gives the text of the reference's greedy ids, and the tokenizer goes back
// out as tokenizer.json with the same ids.
void check_greedy_with_tokenizer_json(const std::string& arch) {
  TempDir dir;
  const std::filesystem::path tok = dir.path / "tok";
  std::filesystem::create_directories(tok);
  write_text(tok / "tokenizer.json", neox_tokenizer_json());
  const Tokenizer tokenizer = Tokenizer::load(tok.string());
  CHECK(tokenizer.vocab_size() == 2 + 94 + 2 + 10);
  const std::string prompt = "the cat sat on the mat";
  const std::vector<int> prompt_ids = tokenizer.encode(prompt);
  CHECK(tokenizer.decode(prompt_ids) == prompt);
  CHECK(prompt_ids.size() < 12);  // the merges apply

  INFO(arch);
  const std::string hf = make_hf(dir, arch, tokenizer.vocab_size(), std::string("hf_") + arch);
  std::filesystem::copy_file(tok / "tokenizer.json", std::filesystem::path(hf) / "tokenizer.json");
  const std::string ckpt = dir / (std::string("ck_") + arch);
  auto imported = run_cli("import " + hf + " --out " + ckpt);  // the tokenizer from hf: tokenizer.json only
  INFO(imported.out << imported.err);
  REQUIRE(imported.exit_code == 0);
  const Tokenizer carried = Tokenizer::from_serialized(read_checkpoint(ckpt).tokenizer_model);
  CHECK(carried.encode(prompt) == prompt_ids);

  nlohmann::json ids = nlohmann::json::object();
  ids["input_ids"] = nlohmann::json::array({nlohmann::json(prompt_ids)});  // one row
  write_text(dir / "prompt.json", ids.dump());
  REQUIRE(run_shell(kReference + " greedy " + arch + " " + hf + " " + (dir / "prompt.json") + " --new 20",
                    dir / "greedy.json"));
  const auto continuation = nlohmann::json::parse(read_text(dir / "greedy.json"))[0].get<std::vector<int>>();
  REQUIRE(continuation.size() == 20);
  std::vector<int> text_ids;  // generate prints the prompt and the continuation's text, special tokens left out
  for (int id : continuation) {
    if (!tokenizer.is_special(id)) text_ids.push_back(id);
  }

  auto generated = run_cli("generate --checkpoint " + ckpt + " --prompt '" + prompt +
                           "' --temperature 0 --max-new-tokens 20 --ignore-eos");
  INFO(generated.err);
  REQUIRE(generated.exit_code == 0);
  CHECK(generated.out == prompt + tokenizer.decode(text_ids) + "\n");

  // The tokenizer goes back out as tokenizer.json, with the same ids.
  REQUIRE(run_cli("export --checkpoint " + ckpt + " --format hf --out " + (dir / (std::string("back_") + arch)))
              .exit_code == 0);
  const Tokenizer exported = Tokenizer::load((dir / (std::string("back_") + arch)) + "/tokenizer.json");
  CHECK(exported.encode(prompt + " <|endoftext|>\n!") == tokenizer.encode(prompt + " <|endoftext|>\n!"));
}

}  // namespace

TEST_CASE("imported GPT-NeoX (parallel, rotary_pct 0.25) matches a Python reference and exports back bit for bit",
          "[hf][python][gpt_neox]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  check_round_trip("gpt-neox");
}

TEST_CASE("imported GPT-NeoX (sequential, rotary_pct 1, tied, old buffers) matches a Python reference and exports "
          "back bit for bit",
          "[hf][python][gpt_neox]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  check_round_trip("gpt-neox-seq");
}

TEST_CASE("GPT-NeoX (parallel, rotary_pct 0.25) from a tokenizer.json alone: greedy generate equals the reference's",
          "[hf][python][gpt_neox]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  check_greedy_with_tokenizer_json("gpt-neox");
}

TEST_CASE("GPT-NeoX (sequential, rotary_pct 1) from a tokenizer.json alone: greedy generate equals the reference's",
          "[hf][python][gpt_neox]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  check_greedy_with_tokenizer_json("gpt-neox-seq");
}

TEST_CASE("train --init continues an imported GPT-NeoX: finite loss that falls", "[hf][python][gpt_neox]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  const Fixture& corpus = tiny_corpus();
  TempDir dir;
  const std::string hf = make_hf(dir, "gpt-neox", corpus.vocab_size), ckpt = dir / "ckpt", run = dir / "run";
  REQUIRE(run_cli("import " + hf + " --out " + ckpt + " --tokenizer " + corpus.tokenizer_dir).exit_code == 0);
  auto trained = run_cli("train --init " + ckpt + " --data " + corpus.data_dir +
                         " --steps 30 --batch-size 4 --lr 3e-3 --min-lr 3e-3 --warmup 0 --log-interval 1"
                         " --eval-interval 1000 --eval-iters 1 --out " + run);
  INFO(trained.out << trained.err);
  REQUIRE(trained.exit_code == 0);
  std::vector<double> losses;
  std::istringstream lines(read_text(run + "/metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record["type"] == "train") losses.push_back(record["loss"].get<double>());
  }
  REQUIRE(losses.size() >= 20);
  for (double loss : losses) CHECK(std::isfinite(loss));
  auto mean = [](auto first, auto last) { return std::accumulate(first, last, 0.0) / double(last - first); };
  const double start = mean(losses.begin(), losses.begin() + 5), end = mean(losses.end() - 5, losses.end());
  INFO("first five " << start << ", last five " << end);
  CHECK(end < start - 0.3);
  CHECK(read_checkpoint(run + "/last").model.parallel_residual);
}

TEST_CASE("lmzoo import refuses broken GPT-NeoX directories by name, writing nothing", "[hf][python][gpt_neox]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  TempDir dir;
  const std::string hf = make_hf(dir, "gpt-neox", tiny_corpus().vocab_size);
  const nlohmann::json good = read_hf_config(hf);

  nlohmann::json odd = good;
  odd["rotary_pct"] = 0.3;
  odd["partial_rotary_factor"] = 0.3;
  write_hf_config(hf, odd);
  CHECK(import_refused(dir, hf, "rotary_pct 0.3", 2));

  nlohmann::json scaled = good;
  scaled["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  write_hf_config(hf, scaled);
  CHECK(import_refused(dir, hf, "rope_scaling", 2));
  write_hf_config(hf, good);

  const std::string weights = hf + "/model.safetensors";
  const auto tensors = load_safetensors_dir(hf);
  std::vector<std::pair<std::string, torch::Tensor>> without, reshaped;
  for (const auto& [name, t] : tensors) {
    if (name != "gpt_neox.layers.1.mlp.dense_4h_to_h.weight") without.emplace_back(name, t);
    reshaped.emplace_back(name, name == "embed_out.weight" ? t.slice(1, 0, 40).contiguous() : t);
  }
  write_safetensors(weights, without, {{"format", "pt"}});
  CHECK(import_refused(dir, hf, "'gpt_neox.layers.1.mlp.dense_4h_to_h.weight'", 1));
  write_safetensors(weights, reshaped, {{"format", "pt"}});
  CHECK(import_refused(dir, hf, "'embed_out.weight' has shape", 1));
}
