// Export tests of the variant matrix (issue 5): every gpt, bert and t5 switch combination exports to
// TorchScript whose outputs match lmzoo's; a Llama-style model matches in C++ and in Python.
#include "tests/catch_compat.h"

#include <torch/script.h>

#include "models/llama_presets.h"
#include "models/presets.h"
#include "models/torchscript_export.h"
#include "tests/export_helpers.h"
#include "tests/variant_matrix.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

// A Llama-style tiny shape: llama-nano's switches (rope, rmsnorm, swiglu, 2 kv heads, untied, no bias).
ModelConfig tiny_llama_config() {
  ModelConfig c = find_preset("llama-nano").config;
  c.vocab_size = 99;
  c.d_model = 32;
  c.n_layer = 2;
  c.max_seq_len = 16;
  return c;
}

}  // namespace

TEST_CASE("every gpt switch combination exports and matches lmzoo", "[export][variants]") {
  torch::NoGradGuard no_grad;
  TempDir dir;
  for (const auto& v : switch_matrix(Arch::kGpt)) {
    INFO(v.name);
    torch::manual_seed(31);
    GPT model(v.config);
    perturb(*model);
    model->eval();
    auto loaded = save_and_load(export_gpt(model, "tok"), dir / "gpt.pt");
    for (int64_t T : {1, 16}) {
      auto idx = torch::randint(0, 99, {2, T}, torch::kLong);
      check_close(loaded.forward({idx}).toTensor(), model->forward(idx));
    }
  }
}

TEST_CASE("every bert switch combination exports and matches lmzoo", "[export][variants]") {
  torch::NoGradGuard no_grad;
  TempDir dir;
  for (const auto& v : switch_matrix(Arch::kBert)) {
    INFO(v.name);
    torch::manual_seed(32);
    Bert model(v.config);
    perturb(*model);
    model->eval();
    auto loaded = save_and_load(export_bert(model, "tok"), dir / "bert.pt");
    auto ids = torch::randint(0, 99, {3, 12}, torch::kLong);
    auto mask = padding_mask(3, 12);
    auto types = torch::randint(0, 2, {3, 12}, torch::kLong);
    check_close(loaded.forward({ids, mask, types}).toTensor(), model->forward(ids, mask, types));
    check_close(tuple_item(loaded.get_method("encode")({ids, mask, types}), 1), model->pooled(ids, mask, types));
  }
}

TEST_CASE("every t5 switch combination exports and matches lmzoo", "[export][variants]") {
  torch::NoGradGuard no_grad;
  TempDir dir;
  for (const auto& v : t5_switch_matrix()) {
    INFO(v.name);
    torch::manual_seed(33);
    T5 model(v.config);
    perturb(*model);
    model->eval();
    auto loaded = save_and_load(export_t5(model, "tok"), dir / "t5.pt");
    auto ids = torch::randint(0, 99, {2, 11}, torch::kLong);
    auto mask = padding_mask(2, 11);
    auto dec = torch::randint(0, 99, {2, 5}, torch::kLong);
    check_close(loaded.forward({ids, mask, dec}).toTensor(), model->forward(ids, mask, dec), 1e-4);
  }
}

TEST_CASE("a Llama-style export matches lmzoo's logits in C++ and in Python", "[export][variants][python]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(34);
  const ModelConfig c = tiny_llama_config();
  GPT model(c);
  perturb(*model);
  model->eval();
  TempDir dir;
  export_gpt(model, "tok").save(dir / "llama.pt");
  auto idx = torch::randint(0, 99, {3, 13}, torch::kLong);
  auto expected = model->forward(idx);
  check_close(torch::jit::load(dir / "llama.pt").forward({idx}).toTensor(), expected);
  if (!python_has_torch()) {
    WARN("skipped the Python half: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  save_tensor(dir / "ids.pt", idx);
  save_tensor(dir / "logits.pt", expected);
  const nlohmann::json calls = nlohmann::json::array({{{"model", "llama.pt"},
                                                        {"method", "forward"},
                                                        {"args", {"ids"}},
                                                        {"expected", {"logits"}},
                                                        {"attrs", {{"config_json", nlohmann::json(c)}}}}});
  write_text(dir / "calls.json", calls.dump());
  write_text(dir / "check.py", kPythonCheck);
  const std::string cmd = "/usr/bin/python3 " + (dir / "check.py") + " " + dir.path.string() + " > " + (dir / "diff");
  REQUIRE(std::system(cmd.c_str()) == 0);
  CHECK(std::stod(read_text(dir / "diff")) < 1e-5);
}
