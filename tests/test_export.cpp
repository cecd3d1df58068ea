// TorchScript export tests: the module loads with torch::jit::load and in Python's torch.jit.load
// and matches lmzoo's logits for several batch sizes and lengths, for several model variants.
#include <catch2/catch.hpp>

#include <torch/script.h>

#include "models/torchscript_export.h"
#include "tests/cli_helpers.h"
#include "tests/model_fixtures.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {
ModelConfig export_config() { return tiny_gpt_config(); }
}  // namespace

TEST_CASE("exported TorchScript matches lmzoo's logits in C++", "[export]") {
  struct Variant {
    const char* name;
    bool bias, tie;
    const char *norm, *position, *activation, *norm_position;
  };
  const Variant variants[] = {
      {"gpt2-like", true, true, "layernorm", "learned", "gelu-tanh", "pre"},
      {"nano (no bias)", false, true, "layernorm", "learned", "gelu", "pre"},
      {"post-norm, untied, rmsnorm, relu", false, false, "rmsnorm", "learned", "relu", "post"},
      {"no positions, silu", true, true, "layernorm", "none", "silu", "pre"},
  };
  TempDir dir;
  for (const auto& v : variants) {
    torch::manual_seed(7);
    ModelConfig c = export_config();
    c.bias = v.bias;
    c.tie_embeddings = v.tie;
    c.norm = v.norm;
    c.position = v.position;
    c.activation = v.activation;
    c.norm_position = v.norm_position;
    GPT model(c);
    model->eval();
    const std::string path = dir / "model.pt";
    export_gpt(model, "tokenizer-bytes").save(path);
    auto loaded = torch::jit::load(path);
    for (int64_t B : {1, 3}) {
      for (int64_t T : {1, 7, 16}) {
        auto idx = torch::randint(0, 99, {B, T}, torch::kLong);
        auto expected = model->forward(idx);
        auto got = loaded.forward({idx}).toTensor();
        INFO(v.name << " B=" << B << " T=" << T);
        REQUIRE(got.sizes() == expected.sizes());
        CHECK(torch::allclose(got, expected, 1e-5, 1e-5));
      }
    }
    CHECK(nlohmann::json::parse(loaded.attr("config_json").toStringRef()) == nlohmann::json(c));
    auto tok = loaded.attr("tokenizer_model").toTensor();
    CHECK(std::string(static_cast<const char*>(tok.data_ptr()), tok.numel()) == "tokenizer-bytes");
  }
}

TEST_CASE("exported TorchScript runs in Python's torch.jit.load and matches", "[export][python]") {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  torch::manual_seed(8);
  ModelConfig c = export_config();
  c.bias = true;
  GPT model(c);
  model->eval();
  TempDir dir;
  export_gpt(model, "tok").save(dir / "model.pt");
  auto idx = torch::randint(0, 99, {2, 11}, torch::kLong);
  auto expected = model->forward(idx).detach();
  auto write = [&](const std::string& name, const torch::Tensor& t) {
    auto bytes = torch::pickle_save(t);
    write_text(dir / name, std::string(bytes.begin(), bytes.end()));
  };
  write("input.pt", idx);
  write("expected.pt", expected);
  const std::string script =
      "import json, sys, torch\n"
      "m = torch.jit.load(sys.argv[1] + '/model.pt')\n"
      "x = torch.load(sys.argv[1] + '/input.pt')\n"
      "y = torch.load(sys.argv[1] + '/expected.pt')\n"
      "out = m(x)\n"
      "assert json.loads(m.config_json)['d_model'] == 32\n"
      "print(float((out - y).abs().max()))\n";
  write_text(dir / "check.py", script);
  const std::string cmd = "/usr/bin/python3 " + (dir / "check.py") + " " + dir.path.string() + " > " + (dir / "diff");
  REQUIRE(std::system(cmd.c_str()) == 0);
  const double diff = std::stod(read_text(dir / "diff"));
  CHECK(diff < 1e-5);
}
