// Phi-3 (the family added through the models/hf/ registry): its config read as transformers 4.x and 5.x write it, the
// forms lmzoo refuses by name, and a tiny imported Phi-3 against the float64 Python reference (tests/hf_reference.py,
// which splits qkv_proj / gate_up_proj itself), exported back as the Mistral it computes like.
#include <nlohmann/json.hpp>

#include "models/hf_config.h"
#include "tests/catch_compat.h"
#include "tests/hf_round_trip.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

// A Phi3Config as transformers 4.48 writes it (rope_theta, sliding_window at the top level).
nlohmann::json phi3_v4() {
  return {{"architectures", {"Phi3ForCausalLM"}}, {"model_type", "phi3"}, {"vocab_size", 97}, {"hidden_size", 32},
          {"intermediate_size", 88}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"max_position_embeddings", 32}, {"original_max_position_embeddings", 32},
          {"rms_norm_eps", 1e-5}, {"rope_theta", 10000.0}, {"rope_scaling", nullptr}, {"sliding_window", 5},
          {"hidden_act", "silu"}, {"resid_pdrop", 0.0}, {"embd_pdrop", 0.0}, {"attention_dropout", 0.0},
          {"tie_word_embeddings", false}, {"torch_dtype", "float32"}};
}

// The same model as transformers 5.x writes it: rope settings only in rope_parameters, dtype.
nlohmann::json phi3_v5() {
  nlohmann::json j = phi3_v4();
  j.erase("rope_theta");
  j.erase("rope_scaling");
  j.erase("torch_dtype");
  j["dtype"] = "float32";
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}, {"partial_rotary_factor", 1.0}};
  return j;
}

}  // namespace

TEST_CASE("Phi-3 configs of transformers 4 and 5 read as the same Llama-shaped model with a window", "[hf]") {
  const HfModelDescription v4 = model_config_from_hf(phi3_v4());
  CHECK(v4.architecture == HfArchitecture::kPhi3ForCausalLM);
  CHECK(v4.config.position == Position::kRope);
  CHECK(v4.config.norm == NormKind::kRmsNorm);
  CHECK(v4.config.activation == Activation::kSwiglu);
  CHECK_FALSE(v4.config.bias);
  CHECK(v4.config.kv_heads() == 2);
  CHECK(v4.config.attention_window == 5);
  CHECK(v4.config.norm_eps == 1e-5);
  CHECK(v4.config.rope_base == 10000.0);
  CHECK(nlohmann::json(model_config_from_hf(phi3_v5()).config) == nlohmann::json(v4.config));

  // Phi-3's own defaults where a key is absent: RMSNorm eps 1e-5 (Llama's is 1e-6), no window.
  nlohmann::json bare = phi3_v4();
  bare.erase("rms_norm_eps");
  bare.erase("sliding_window");
  const ModelConfig defaults = model_config_from_hf(bare).config;
  CHECK(defaults.norm_eps == 1e-5);
  CHECK(defaults.attention_window == 0);

  // lmzoo writes the same math back as Mistral (with a window) or Llama; Phi-3's own config reads back the same.
  CHECK(hf_architecture_of(v4.config) == HfArchitecture::kMistralForCausalLM);
  CHECK(hf_architecture_of(defaults) == HfArchitecture::kLlamaForCausalLM);
  const nlohmann::json written = hf_config_from_model(v4.config, HfArchitecture::kPhi3ForCausalLM, {});
  CHECK(written["model_type"] == "phi3");
  CHECK(nlohmann::json(model_config_from_hf(written).config) == nlohmann::json(v4.config));
}

TEST_CASE("Phi-3 settings lmzoo does not compute are refused naming the field", "[hf]") {
  nlohmann::json longrope = phi3_v4();  // Phi-3-mini-128k, Phi-3.5
  longrope["rope_scaling"] = {{"type", "longrope"}, {"short_factor", {1.0}}, {"long_factor", {1.0}}};
  CHECK(refusal(longrope).find("rope_scaling {") != std::string::npos);
  nlohmann::json partial = phi3_v5();  // Phi-4-mini rotates three quarters of each head
  partial["rope_parameters"]["partial_rotary_factor"] = 0.75;
  CHECK(refusal(partial).find("partial_rotary_factor 0.75 is not supported") != std::string::npos);
  nlohmann::json disagree = phi3_v4();
  disagree["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500.0}};
  CHECK(refusal(disagree).find("rope_parameters.rope_theta 500.0 differs from rope_theta 10000.0") !=
        std::string::npos);
  nlohmann::json no_window = phi3_v4();
  no_window["sliding_window"] = 0;
  CHECK(refusal(no_window).find("sliding_window must be positive or null") != std::string::npos);
}

TEST_CASE("an imported Phi-3 matches the Python reference and exports as a Mistral with the same weights",
          "[hf][python]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  const Fixture& corpus = tiny_corpus();
  TempDir dir;
  const std::string hf = dir / "hf", ckpt = dir / "ckpt", back = dir / "back", again = dir / "again";
  REQUIRE(run_shell(kReference + " make phi3 " + hf + " --vocab " + std::to_string(corpus.vocab_size),
                    dir / "make.log"));
  auto imported = run_cli("import " + hf + " --out " + ckpt + " --tokenizer " + corpus.tokenizer_dir);
  INFO(imported.out << imported.err);
  REQUIRE(imported.exit_code == 0);
  CHECK(imported.err.empty());

  // The 8-token inputs cross the window of 5: the reference masks as Phi-3's code does.
  REQUIRE(run_cli("export --checkpoint " + ckpt + " --out " + (dir / "model.pt")).exit_code == 0);
  write_text(dir / "ids.json", ids_json("phi3"));
  const bool close = run_shell(kReference + " compare phi3 " + hf + " " + (dir / "model.pt") + " " +
                                   (dir / "ids.json") + " --tol 1e-5",
                               dir / "compare.log");
  INFO(read_text(dir / "compare.log"));
  CHECK(close);

  auto exported = run_cli("export --checkpoint " + ckpt + " --format hf --out " + back);
  INFO(exported.out << exported.err);
  REQUIRE(exported.exit_code == 0);
  CHECK(nlohmann::json::parse(read_text(back + "/config.json"))["architectures"][0] == "MistralForCausalLM");
  REQUIRE(run_cli("import " + back + " --out " + again).exit_code == 0);
  check_same_weights(ckpt, again);
  // The Mistral file computes what the Phi-3 file does, by the reference's own Mistral formulas.
  const bool same = run_shell(kReference + " compare mistral " + back + " " + (dir / "model.pt") + " " +
                                  (dir / "ids.json") + " --tol 1e-5",
                              dir / "compare_back.log");
  INFO(read_text(dir / "compare_back.log"));
  CHECK(same);
}
