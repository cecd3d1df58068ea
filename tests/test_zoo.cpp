// Model zoo tests (issue 5): every preset's `presets --show` JSON reads back to the same config and builds
// the same model; published parameter counts of the Llama presets; an edited --show config and the switch
// flags train, evaluate, generate and export from the CLI; bad switch values get one clear line.
#include "tests/catch_compat.h"

#include <filesystem>

#include "models/parameter_sizes.h"
#include "models/presets.h"
#include "models/registry.h"
#include "tests/cli_checks.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {
// The (name, shape) list of a model's parameters.
std::vector<std::pair<std::string, std::vector<int64_t>>> parameter_shapes(const ModelConfig& c) {
  torch::NoGradGuard no_grad;
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
  for (const auto& p : build_model(c).module()->named_parameters()) shapes.push_back({p.key(), p.value().sizes().vec()});
  return shapes;
}

nlohmann::json run_config(const std::string& run) {
  return nlohmann::json::parse(read_text(run + "/last/config.json")).at("model");
}
}  // namespace

TEST_CASE("every preset's --show JSON reads back to the same config and model", "[zoo][cli]") {
  TempDir dir;
  for (const auto& preset : all_presets()) {
    INFO(preset.name);
    auto shown = run_cli("presets --show " + preset.name);
    REQUIRE(shown.exit_code == 0);
    write_text(dir / "config.json", shown.out);
    const ModelConfig back = load_model_config(dir / "config.json");
    CHECK(nlohmann::json(back) == nlohmann::json(preset.config));
    ModelConfig counted = back, expected = preset.config;
    if (counted.vocab_size == 0) counted.vocab_size = expected.vocab_size = 99;  // from the tokenizer
    CHECK(parameter_count(counted) == parameter_count(expected));
    if (parameter_count(expected) < 70'000'000) {  // building is quick enough up to t5-small
      CHECK(parameter_shapes(counted) == parameter_shapes(expected));
    }
  }
}

TEST_CASE("Llama-style presets have their published parameter counts", "[zoo]") {
  CHECK(parameter_count(find_preset("tinyllama-1.1b").config) == 1100048384);
  CHECK(parameter_count(find_preset("llama2-7b").config) == 6738415616);
  CHECK(parameter_count(find_preset("llama2-13b").config) == 13015864320);
  CHECK(parameter_count(find_preset("llama2-70b").config) == 68976648192);
  CHECK(parameter_count(find_preset("gpt2").config) == 124439808);
  const ModelConfig nano = find_preset("llama-nano").config;
  CHECK(nano.position == Position::kRope);
  CHECK(nano.norm == NormKind::kRmsNorm);
  CHECK(nano.activation == Activation::kSwiglu);
  CHECK(nano.kv_heads() < nano.n_head);
  CHECK_FALSE(nano.bias);
  auto listed = run_cli("presets");
  REQUIRE(listed.exit_code == 0);
  CHECK(listed.out.find("6738415616") != std::string::npos);
}

TEST_CASE("CLI: an edited presets --show config trains, evaluates, generates and exports", "[zoo][cli][e2e]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  auto shown = run_cli("presets --show llama-nano");
  REQUIRE(shown.exit_code == 0);
  auto config = nlohmann::json::parse(shown.out);
  config["n_layer"] = 1;
  config["n_kv_heads"] = 1;  // multi-query
  config["d_model"] = 32;
  write_text(dir / "edited.json", config.dump(2));
  const std::string run = dir / "run";
  auto train = run_cli("train --config " + (dir / "edited.json") + " --data " + f.data_dir + " --out " + run +
                       " --steps 3 --batch-size 2 --seq-len 16 --eval-interval 3 --eval-iters 1 --device cpu");
  INFO(train.err);
  REQUIRE(train.exit_code == 0);
  const auto saved = run_config(run);
  CHECK(saved["n_layer"] == 1);
  CHECK(saved["n_kv_heads"] == 1);
  CHECK(saved["position"] == "rope");
  CHECK(saved["activation"] == "swiglu");
  auto eval = run_cli("eval --checkpoint " + run + " --data " + f.data_dir + " --device cpu");
  REQUIRE(eval.exit_code == 0);
  CHECK(last_json_line(eval.out)["ppl"].get<double>() > 1.0);
  auto gen = run_cli("generate --checkpoint " + run + " --prompt 'The' --max-new-tokens 8 --seed 1");
  REQUIRE(gen.exit_code == 0);
  CHECK(gen.out.rfind("The", 0) == 0);
  REQUIRE(run_cli("export --checkpoint " + run + " --out " + (dir / "m.pt")).exit_code == 0);
  CHECK(std::filesystem::exists(dir / "m.pt"));
}

TEST_CASE("CLI: the switch flags reach the model config of gpt, bert and t5 runs", "[zoo][cli]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  const std::string common = " --data " + f.data_dir + " --steps 2 --batch-size 2 --seq-len 16 --n-layer 1 " +
                             "--d-model 32 --n-head 4 --eval-interval 2 --eval-iters 1 --device cpu ";
  auto gpt = run_cli("train --arch gpt --out " + (dir / "gpt") + common +
                     "--position alibi --n-kv-heads 2 --activation geglu --norm rmsnorm --norm-position post "
                     "--final-norm=false --tie-embeddings=false --vocab-multiple 64 --init bert --d-ff 48 "
                     "--norm-eps 1e-6 --dropout 0.1 --bias");
  INFO(gpt.err);
  REQUIRE(gpt.exit_code == 0);
  const auto g = run_config(dir / "gpt");
  CHECK(g["position"] == "alibi");
  CHECK(g["n_kv_heads"] == 2);
  CHECK(g["activation"] == "geglu");
  CHECK(g["norm"] == "rmsnorm");
  CHECK(g["norm_position"] == "post");
  CHECK(g["final_norm"] == false);
  CHECK(g["tie_embeddings"] == false);
  CHECK(g["vocab_multiple"] == 64);
  CHECK(g["init"] == "bert");
  CHECK(g["d_ff"] == 48);
  CHECK(g["norm_eps"] == 1e-6);
  CHECK(g["bias"] == true);
  auto gen = run_cli("generate --checkpoint " + (dir / "gpt") + " --prompt 'A' --max-new-tokens 5 --beams 2");
  CHECK(gen.exit_code == 0);

  auto bert = run_cli("train --arch bert --out " + (dir / "bert") + common +
                      "--position rope --rope-base 500 --activation swiglu --n-kv-heads 1 --norm-position pre");
  INFO(bert.err);
  REQUIRE(bert.exit_code == 0);
  const auto b = run_config(dir / "bert");
  CHECK(b["position"] == "rope");
  CHECK(b["rope_base"] == 500.0);
  CHECK(b["n_kv_heads"] == 1);
  CHECK(b["d_ff"] == 0);  // derived: 8/3 * 32 rounded up to 64
  auto eval = run_cli("eval --checkpoint " + (dir / "bert") + " --data " + f.data_dir + " --device cpu");
  CHECK(eval.exit_code == 0);
  auto fill = run_cli("generate --checkpoint " + (dir / "bert") + " --prompt 'The [MASK] sat'");
  CHECK(fill.exit_code == 0);

  auto t5 = run_cli("train --arch t5 --out " + (dir / "t5") + common +
                    "--position rope --n-kv-heads 2 --activation swiglu --norm-position post");
  INFO(t5.err);
  REQUIRE(t5.exit_code == 0);
  const auto t = run_config(dir / "t5");
  CHECK(t["position"] == "rope");
  CHECK(t["n_kv_heads"] == 2);
  auto answer = run_cli("generate --checkpoint " + (dir / "t5") + " --prompt 'The cat' --max-new-tokens 6 --beams 2");
  CHECK(answer.exit_code == 0);
  // rope tables cover max_seq_len (16) decoder positions: more is one clear error, not a crash.
  check_user_error(run_cli("generate --checkpoint " + (dir / "t5") + " --prompt 'The cat' --max-new-tokens 40"),
                   "--max-new-tokens is at most 16");
}

TEST_CASE("CLI: bad switch values give one clear line and a non-zero exit", "[zoo][cli][errors]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  const std::string base = "train --data " + f.data_dir + " --out " + (dir / "run") + " --steps 1 --device cpu ";
  check_user_error(run_cli(base + "--n-kv-heads 3"), "n_kv_heads");
  check_user_error(run_cli(base + "--position rotary"), "position");
  check_user_error(run_cli(base + "--activation swish"), "activation");
  check_user_error(run_cli(base + "--arch t5 --init gpt2"), "init 't5'");
  check_user_error(run_cli(base + "--vocab-multiple 0"), "vocab_multiple");
  CHECK_FALSE(std::filesystem::exists(dir / "run"));
}
