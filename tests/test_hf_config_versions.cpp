// Tests of config.json as transformers 4.48 and 5.16 save it (tests/fixtures/hf_configs, written by each version
// through tools/hf_config_fixtures.py): both read as the same model, lmzoo's own config reads back, and the forms
// one version's keys contradict or lmzoo cannot represent are refused naming the keys.
#include "tests/catch_compat.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "models/hf_config.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"

using namespace lmzoo;
using namespace lmzoo::test;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = fs::path(LMZOO_SOURCE_DIR) / "tests/fixtures/hf_configs";
const std::vector<std::string> kArchs = {"gpt2",  "bert",     "bert-cls",     "t5-v1_0", "t5-v1_1",
                                         "llama", "qwen2",    "mistral",      "smollm2", "gpt-neox",
                                         "gpt-neox-seq", "roberta", "distilbert", "phi3"};

nlohmann::json saved_config(const std::string& version, const std::string& arch) {
  std::ifstream in(kFixtures / ("transformers-" + version) / (arch + ".json"));
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// The message of the HfFormatError model_config_from_hf throws for J ("" when it reads).
std::string refusal(const nlohmann::json& j) {
  try {
    model_config_from_hf(j);
  } catch (const HfFormatError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every family's config.json of transformers 4.48 and of 5.16 reads as the same model", "[hf][hf_versions]") {
  for (const std::string& arch : kArchs) {
    INFO(arch);
    const nlohmann::json v4 = saved_config("4.48", arch), v5 = saved_config("5.16", arch);
    const HfModelDescription d4 = model_config_from_hf(v4), d5 = model_config_from_hf(v5);
    CHECK(d4.architecture == d5.architecture);
    CHECK(nlohmann::json(d4.config) == nlohmann::json(d5.config));
    d4.config.validate();
    // transformers 5 saves untied T5 v1.1 as tied and unscaled, without lm_head.weight: lmzoo starts the head from
    // shared.weight. Nothing else differs in how the weights are found.
    CHECK(d5.lm_head_from_shared == (arch == "t5-v1_1"));
    CHECK_FALSE(d4.lm_head_from_shared);

    // What lmzoo writes for the model reads back as it (no 4.x / 5.x disagreement in its own file).
    const HfTokenIds ids = arch == "roberta" ? HfTokenIds{1, 0, 2} : HfTokenIds{0, 1, 2};  // RoBERTa's pad is 1
    const nlohmann::json written = hf_config_from_model(d4.config, d4.architecture, ids);
    CHECK(nlohmann::json(model_config_from_hf(written).config) == nlohmann::json(d4.config));
  }
}

TEST_CASE("lmzoo's config.json says the rope and T5 settings in both versions' keys, in agreement", "[hf][hf_versions]") {
  const HfTokenIds ids{0, 1, 2};
  for (const std::string arch : {"llama", "qwen2", "mistral", "gpt-neox-seq"}) {
    INFO(arch);
    const HfModelDescription d = model_config_from_hf(saved_config("5.16", arch));
    const nlohmann::json w = hf_config_from_model(d.config, d.architecture, ids);
    REQUIRE(w.contains("rope_parameters"));
    const double theta = w["rope_parameters"]["rope_theta"].get<double>();
    CHECK(theta == d.config.rope_base);
    const std::string legacy = arch == "gpt-neox-seq" ? "rotary_emb_base" : "rope_theta";
    REQUIRE(w.contains(legacy));  // what 4.48 reads
    CHECK(w[legacy].get<double>() == theta);
  }
  for (const std::string arch : {"t5-v1_0", "t5-v1_1"}) {
    INFO(arch);
    const HfModelDescription d = model_config_from_hf(saved_config("4.48", arch));
    const nlohmann::json w = hf_config_from_model(d.config, d.architecture, ids);
    REQUIRE(w.contains("scale_decoder_outputs"));
    // Scaled exactly when tied, which is how 4.x reads tie_word_embeddings too.
    CHECK(w["scale_decoder_outputs"].get<bool>() == w["tie_word_embeddings"].get<bool>());
    CHECK(w["tie_word_embeddings"].get<bool>() == (arch == "t5-v1_0"));
  }
}

TEST_CASE("configs whose 4.x and 5.x keys disagree, or in 5.x forms lmzoo lacks, are refused naming the keys",
          "[hf][hf_versions]") {
  nlohmann::json llama = saved_config("5.16", "llama");
  llama["rope_theta"] = 10000.0;  // rope_parameters says 500000
  std::string why = refusal(llama);
  CHECK(why.find("rope_theta") != std::string::npos);
  CHECK(why.find("rope_parameters") != std::string::npos);

  nlohmann::json neox = saved_config("5.16", "gpt-neox-seq");
  neox["rotary_pct"] = 0.5;  // rope_parameters.partial_rotary_factor says 1
  why = refusal(neox);
  CHECK(why.find("rotary_pct") != std::string::npos);
  CHECK(why.find("partial_rotary_factor") != std::string::npos);

  nlohmann::json per_layer = saved_config("5.16", "llama");  // 5.x's per-layer-type form
  per_layer["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}},
                                  {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
  CHECK(refusal(per_layer).find("rope_parameters") != std::string::npos);

  nlohmann::json real = saved_config("5.16", "bert");  // strict JSON types
  real["hidden_size"] = 32.0;
  CHECK(refusal(real).find("hidden_size") != std::string::npos);

  nlohmann::json t5 = saved_config("5.16", "t5-v1_1");
  t5["scale_decoder_outputs"] = true;
  t5["tie_word_embeddings"] = false;
  why = refusal(t5);
  CHECK(why.find("scale_decoder_outputs") != std::string::npos);
  CHECK(why.find("tie_word_embeddings") != std::string::npos);

  nlohmann::json qwen = saved_config("5.16", "qwen2");
  qwen["layer_types"] = {"full_attention", "sliding_attention"};  // 5.x decides by it, whatever use_sliding_window says
  qwen["sliding_window"] = 5;
  CHECK(refusal(qwen).find("layer_types") != std::string::npos);
}

TEST_CASE("cli: lmzoo import refuses a config.json with disagreeing keys in one line naming both, exit 2, writing "
          "nothing", "[hf][hf_versions][cli]") {
  TempDir dir;
  const fs::path hf = dir / "hf";
  fs::create_directories(hf);
  nlohmann::json llama = saved_config("5.16", "llama");
  llama["rope_theta"] = 10000.0;
  write_text(hf / "config.json", llama.dump(2));
  const std::string out = dir / "out";
  const CliResult r = run_cli("import " + hf.string() + " --out " + out + " --tokenizer " + tiny_corpus().tokenizer_dir);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.find("rope_theta") != std::string::npos);
  CHECK(r.err.find("rope_parameters") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
}
