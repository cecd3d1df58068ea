// Llama's kin with Llama's tensor names: Qwen2 (q/k/v biases), Mistral (a sliding attention window) and SmolLM2's
// tied Llama: config mapping and refusals, the window's math, imports against the float64 Python reference
// (tests/hf_reference.py), greedy decoding against the reference's, and the presets' published sizes.
#include <nlohmann/json.hpp>

#include "models/generation.h"
#include "models/hf_config.h"
#include "models/parameter_sizes.h"
#include "models/presets.h"
#include "models/torchscript_export.h"
#include "tests/catch_compat.h"
#include "tests/hf_round_trip.h"
#include "tests/model_fixtures.h"
#include "tests/smollm2_tokenizer.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

nlohmann::json tiny_hf(const std::string& architecture, const std::string& model_type) {
  return {{"architectures", {architecture}}, {"model_type", model_type}, {"vocab_size", 97}, {"hidden_size", 32},
          {"intermediate_size", 88}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"max_position_embeddings", 32}, {"rms_norm_eps", 1e-6},
          {"rope_theta", 1000000.0}, {"hidden_act", "silu"}, {"tie_word_embeddings", true}};
}

ModelConfig windowed_gpt(int64_t window, int64_t layers) {
  ModelConfig c = tiny_gpt_config(99, 32, 4, 16);
  c.n_layer = layers;
  c.position = Position::kRope;
  c.attention_window = window;
  return c;
}

}  // namespace

TEST_CASE("Qwen2 and Mistral configs map onto lmzoo's fields and back", "[hf]") {
  const auto qwen2 = model_config_from_hf(tiny_hf("Qwen2ForCausalLM", "qwen2"));
  CHECK(qwen2.architecture == HfArchitecture::kQwen2ForCausalLM);
  CHECK(qwen2.config.qkv_bias);
  CHECK_FALSE(qwen2.config.bias);
  CHECK(qwen2.config.tie_embeddings);
  CHECK(qwen2.config.attention_window == 0);
  CHECK(qwen2.config.rope_base == 1000000.0);
  CHECK(hf_architecture_of(qwen2.config) == HfArchitecture::kQwen2ForCausalLM);

  nlohmann::json mistral_json = tiny_hf("MistralForCausalLM", "mistral");
  mistral_json["sliding_window"] = 5;
  const auto mistral = model_config_from_hf(mistral_json);
  CHECK(mistral.config.attention_window == 5);
  CHECK_FALSE(mistral.config.qkv_bias);
  CHECK(hf_architecture_of(mistral.config) == HfArchitecture::kMistralForCausalLM);
  mistral_json["sliding_window"] = nullptr;  // Mistral v0.2 onwards: no window, Llama's math
  CHECK(model_config_from_hf(mistral_json).config.attention_window == 0);

  // The config.json lmzoo writes reads back to the same model.
  for (const auto& d : {qwen2, mistral}) {
    const nlohmann::json written = hf_config_from_model(d.config, d.architecture, {});
    const ModelConfig back = model_config_from_hf(written).config;
    CHECK(nlohmann::json(back) == nlohmann::json(d.config));
  }
  // A Llama with q/k/v biases and none elsewhere is a Qwen2; biases everywhere stay a Llama.
  ModelConfig llama = qwen2.config;
  llama.bias = true;
  CHECK(hf_architecture_of(llama) == HfArchitecture::kLlamaForCausalLM);
}

TEST_CASE("Qwen2 and Mistral settings lmzoo does not compute are refused naming the field", "[hf]") {
  nlohmann::json windowed = tiny_hf("Qwen2ForCausalLM", "qwen2");
  windowed["use_sliding_window"] = true;
  windowed["sliding_window"] = 16;
  CHECK(refusal(windowed).find("use_sliding_window true with sliding_window 16 shorter than "
                               "max_position_embeddings 32") != std::string::npos);
  windowed["sliding_window"] = 32;  // a window as long as the context never binds
  CHECK(refusal(windowed).empty());
  // transformers 5 says it per layer.
  nlohmann::json typed = tiny_hf("Qwen2ForCausalLM", "qwen2");
  const size_t layers = typed["num_hidden_layers"].get<size_t>();
  typed["layer_types"] = std::vector<std::string>(layers, "full_attention");
  typed["sliding_window"] = 16;
  CHECK(refusal(typed).empty());
  typed["layer_types"][layers - 1] = "sliding_attention";
  CHECK(refusal(typed).find("layer_types naming sliding_attention with sliding_window 16 shorter than") !=
        std::string::npos);
  typed["layer_types"][0] = "chunked_attention";
  CHECK(refusal(typed).find("layer_types entry \"chunked_attention\" is not supported") != std::string::npos);
  typed["layer_types"] = {"full_attention"};
  CHECK(refusal(typed).find("layer_types must list one attention type per layer") != std::string::npos);

  nlohmann::json scaled = tiny_hf("MistralForCausalLM", "mistral");
  scaled["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  CHECK(refusal(scaled).find("rope_scaling") != std::string::npos);

  nlohmann::json heads = tiny_hf("MistralForCausalLM", "mistral");
  heads["head_dim"] = 16;
  CHECK(refusal(heads).find("head_dim 16 is not supported") != std::string::npos);

  nlohmann::json partial = tiny_hf("LlamaForCausalLM", "llama");
  partial["partial_rotary_factor"] = 0.5;
  CHECK(refusal(partial).find("partial_rotary_factor 0.5") != std::string::npos);

  nlohmann::json zero = tiny_hf("MistralForCausalLM", "mistral");
  zero["sliding_window"] = 0;
  CHECK(refusal(zero).find("sliding_window must be positive") != std::string::npos);

  ModelConfig windowed_qwen2 = model_config_from_hf(tiny_hf("Qwen2ForCausalLM", "qwen2")).config;
  windowed_qwen2.attention_window = 4;
  CHECK(twin_refusal(windowed_qwen2).find("Qwen2 needs no attention window") != std::string::npos);
}

TEST_CASE("an attention window hides keys W or more positions back, in the forward pass, the cache and export",
          "[gpt][window]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(3);
  GPT one_layer(windowed_gpt(4, 1));
  one_layer->eval();
  auto idx = torch::randint(0, 99, {2, 12}, torch::kLong);
  auto changed = idx.clone();
  changed.select(1, 2).copy_((idx.select(1, 2) + 5) % 99);  // another token at position 2
  const auto base = one_layer->forward(idx), out = one_layer->forward(changed);
  // Positions 2..5 see position 2; from 6 on (6 - 2 >= 4) it is outside the window.
  CHECK_FALSE(torch::allclose(out.slice(1, 2, 6), base.slice(1, 2, 6), 0, 1e-4));
  CHECK(torch::allclose(out.slice(1, 6), base.slice(1, 6), 0, 1e-6));

  torch::manual_seed(3);  // the same weights: a window changes no tensor
  GPT whole(windowed_gpt(0, 1));  // without a window the same change reaches every later position
  whole->eval();
  CHECK_FALSE(torch::allclose(whole->forward(changed).slice(1, 6), whole->forward(idx).slice(1, 6), 0, 1e-4));

  // Two layers, decoded one token at a time through the cache: the same logits as the whole sequence at once.
  torch::manual_seed(4);
  GPT two_layers(windowed_gpt(3, 2));
  two_layers->eval();
  const auto full = two_layers->forward(idx);
  KVCache cache = two_layers->new_cache();
  CHECK(torch::allclose(two_layers->forward(idx.slice(1, 0, 5), &cache), full.slice(1, 0, 5), 1e-5, 1e-5));
  for (int64_t t = 5; t < 12; ++t) {
    CHECK(torch::allclose(two_layers->forward(idx.slice(1, t, t + 1), &cache), full.slice(1, t, t + 1), 1e-5, 1e-5));
  }
  // The TorchScript export masks the same keys.
  auto exported = export_gpt(two_layers, "");
  const auto scripted = exported.forward({idx}).toTensor();
  CHECK(torch::allclose(scripted, full, 1e-5, 1e-5));
}

TEST_CASE("imported Qwen2 and Mistral match a Python reference and export back bit for bit", "[hf][python]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  for (const char* arch : {"qwen2", "mistral"}) round_trip(arch);
}

TEST_CASE("greedy decoding of imported Llama, Qwen2 and Mistral equals the Python reference's for 20 tokens",
          "[hf][python]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  const Fixture& corpus = tiny_corpus();
  for (const char* arch : {"llama", "qwen2", "mistral"}) {
    INFO(arch);
    TempDir dir;
    const std::string hf = dir / "hf", ckpt = dir / "ckpt";
    // 4 prompt tokens + 20 new ones stay inside the 32-position context.
    REQUIRE(run_shell(kReference + " make " + std::string(arch) + " " + hf + " --vocab " +
                          std::to_string(corpus.vocab_size) + " --seed 11",
                      dir / "make.log"));
    REQUIRE(run_cli("import " + hf + " --out " + ckpt + " --tokenizer " + corpus.tokenizer_dir).exit_code == 0);
    const std::vector<int64_t> prompt = {5, 17, 42, 9};
    write_text(dir / "ids.json", "{\"input_ids\": [[5, 17, 42, 9]]}");
    REQUIRE(run_shell(kReference + " greedy " + arch + " " + hf + " " + (dir / "ids.json") + " --new 20",
                      dir / "greedy.json"));
    const auto expected = nlohmann::json::parse(read_text(dir / "greedy.json"))[0].get<std::vector<int64_t>>();

    AnyModel model = load_model(read_checkpoint(ckpt), torch::kCPU);
    GPT gpt = model.as<GPT>();
    gpt->eval();
    SamplingOptions greedy;
    greedy.max_new_tokens = 20;
    greedy.temperature = 0.0;
    CHECK(generate_tokens(gpt, prompt, greedy) == expected);
  }
}

TEST_CASE("SmolLM2, Qwen2.5 and Mistral presets have their published sizes and HF classes", "[zoo][hf]") {
  struct Expected {
    const char* preset;
    int64_t parameters;
    HfArchitecture architecture;
  };
  for (const Expected& e : {Expected{"smollm2-135m", 134515008, HfArchitecture::kLlamaForCausalLM},
                            Expected{"smollm2-360m", 361821120, HfArchitecture::kLlamaForCausalLM},
                            Expected{"qwen2.5-0.5b", 494032768, HfArchitecture::kQwen2ForCausalLM},
                            Expected{"mistral-7b", 7241732096, HfArchitecture::kMistralForCausalLM}}) {
    INFO(e.preset);
    const ModelConfig c = find_preset(e.preset).config;
    CHECK(parameter_count(c) == e.parameters);
    CHECK(hf_architecture_of(c) == e.architecture);
  }
}

TEST_CASE("a SmolLM2-style Llama imports from a tokenizer.json-only directory and exports it back", "[hf][python]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  TempDir dir;
  const std::string hf = dir / "hf", ckpt = dir / "ckpt", back = dir / "back";
  write_smollm2_tokenizer(hf);
  const int64_t rows = 3 + 256 + 5;
  REQUIRE(run_shell(kReference + " make smollm2 " + hf + " --vocab " + std::to_string(rows), dir / "make.log"));
  auto imported = run_cli("import " + hf + " --out " + ckpt);  // no --tokenizer: the directory's tokenizer.json
  INFO(imported.out << imported.err);
  REQUIRE(imported.exit_code == 0);
  const CheckpointInfo info = read_checkpoint(ckpt);
  CHECK(info.model.tie_embeddings);
  CHECK(info.model.vocab_size == rows);

  // Hand-computed ids: "the" (260) and " cat" (263) merge whole; the trailing ' ' is Ġ (byte 0x20 at id 3 + 0x20);
  // the digits split one by one ('4' and '2' at 3 + their bytes); <|im_end|> is matched as itself (2).
  write_text(dir / "text.txt", "the cat 42<|im_end|>");
  auto encoded = run_cli("tokenizer encode --ids --tokenizer " + ckpt, dir / "text.txt");
  INFO(encoded.err);
  REQUIRE(encoded.exit_code == 0);
  CHECK(encoded.out == "260 263 35 55 53 2\n");
  CHECK(run_cli("tokenizer encode --ids --tokenizer " + hf, dir / "text.txt").out == encoded.out);

  auto exported = run_cli("export --checkpoint " + ckpt + " --format hf --out " + back);
  INFO(exported.out << exported.err);
  REQUIRE(exported.exit_code == 0);
  const auto config = nlohmann::json::parse(read_text(back + "/config.json"));
  CHECK(config["architectures"][0] == "LlamaForCausalLM");
  CHECK(config["tie_word_embeddings"] == true);
  CHECK(config["bos_token_id"] == 0);
  CHECK(config["eos_token_id"] == 0);
  const std::filesystem::path only_json = dir.path / "only-json";
  std::filesystem::create_directories(only_json);
  std::filesystem::copy_file(back + "/tokenizer.json", only_json / "tokenizer.json");
  CHECK(run_cli("tokenizer encode --ids --tokenizer " + only_json.string(), dir / "text.txt").out == encoded.out);
  const bool same_bytes = run_shell(kReference + " check-roundtrip " + hf + " " + back, dir / "roundtrip.log");
  INFO(read_text(dir / "roundtrip.log"));
  CHECK(same_bytes);
}

TEST_CASE("lmzoo import refuses a windowed Qwen2 in one line, exit 2, writing nothing", "[hf][python]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  const Fixture& corpus = tiny_corpus();
  TempDir dir;
  const std::string hf = dir / "hf", out = dir / "out";
  REQUIRE(run_shell(kReference + " make qwen2 " + hf + " --vocab " + std::to_string(corpus.vocab_size), dir / "make.log"));
  auto config = nlohmann::json::parse(read_text(hf + "/config.json"));
  config["use_sliding_window"] = true;
  config["sliding_window"] = 8;
  write_text(hf + "/config.json", config.dump());
  auto refused = run_cli("import " + hf + " --out " + out + " --tokenizer " + corpus.tokenizer_dir);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("use_sliding_window true with sliding_window 8") != std::string::npos);
  CHECK(std::count(refused.err.begin(), refused.err.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(out));
}
