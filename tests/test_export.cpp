// TorchScript export tests: the module loads with torch::jit::load and in Python's torch.jit.load
// and matches lmzoo's outputs for several batch sizes, lengths and paddings, for several model variants
// of each family (GPT, BERT, BERT classifier, T5).
#include "tests/catch_compat.h"

#include <algorithm>

#include <torch/script.h>

#include "models/torchscript_export.h"
#include "tests/cli_helpers.h"
#include "tests/export_helpers.h"
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
    c.norm = parse_enum<NormKind>(v.norm);
    c.position = parse_enum<Position>(v.position);
    c.activation = parse_enum<Activation>(v.activation);
    c.norm_position = parse_enum<NormPosition>(v.norm_position);
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
  CHECK(diff < 1e-4);  // the largest over all calls, T5's included (see check_close)
}

namespace {

ModelConfig bert_export_config() {
  ModelConfig c = tiny_bert_config();
  c.norm_eps = 1e-12;
  return c;
}

}  // namespace

TEST_CASE("exported BERT matches lmzoo's MLM logits, hidden states and pooled output", "[export][bert]") {
  struct Variant {
    const char *name, *norm_position, *norm, *activation, *position;
    bool tie, bias;
  };
  const Variant variants[] = {
      {"bert-base-like: post-LN, layernorm, gelu, tied", "post", "layernorm", "gelu", "learned", true, true},
      {"pre-LN, rmsnorm, relu, untied, no bias", "pre", "rmsnorm", "relu", "learned", false, false},
      {"no positions, gelu-tanh, untied", "post", "layernorm", "gelu-tanh", "none", false, true},
      {"pre-LN, silu, tied", "pre", "layernorm", "silu", "learned", true, true},
  };
  torch::NoGradGuard no_grad;
  TempDir dir;
  for (const auto& v : variants) {
    torch::manual_seed(11);
    ModelConfig c = bert_export_config();
    c.norm_position = parse_enum<NormPosition>(v.norm_position);
    c.norm = parse_enum<NormKind>(v.norm);
    c.activation = parse_enum<Activation>(v.activation);
    c.position = parse_enum<Position>(v.position);
    c.tie_embeddings = v.tie;
    c.bias = v.bias;
    Bert model(c);
    perturb(*model);
    model->eval();
    auto loaded = save_and_load(export_bert(model, "tok"), dir / "bert.pt");
    for (int64_t B : {1, 3}) {
      for (int64_t T : {1, 7, 32}) {
        INFO(v.name << " B=" << B << " T=" << T);
        auto ids = torch::randint(0, 99, {B, T}, torch::kLong);
        auto mask = padding_mask(B, T);
        auto types = torch::randint(0, 2, {B, T}, torch::kLong);
        check_close(loaded.forward({ids, mask, types}).toTensor(), model->forward(ids, mask, types));
        auto encoded = loaded.get_method("encode")({ids, mask, types});
        check_close(tuple_item(encoded, 0), model->hidden_states(ids, mask, types));
        check_close(tuple_item(encoded, 1), model->pooled(ids, mask, types));
        check_close(loaded.forward({ids}).toTensor(), model->forward(ids));  // no mask, all type 0
      }
    }
    CHECK(nlohmann::json::parse(loaded.attr("config_json").toStringRef()) == nlohmann::json(c));
    CHECK(loaded.attr("tokenizer_model").toTensor().numel() == 3);
  }
}

TEST_CASE("exported BERT classifier matches lmzoo's class logits and carries the labels", "[export][bert]") {
  torch::NoGradGuard no_grad;
  TempDir dir;
  for (const char* norm_position : {"post", "pre"}) {
    torch::manual_seed(12);
    ModelConfig c = bert_export_config();
    c.norm_position = parse_enum<NormPosition>(norm_position);
    c.labels = {"neg", "pos", "neutral"};
    BertClassifier model(c);
    perturb(*model);
    model->eval();
    auto loaded = save_and_load(export_bert_classifier(model, "tok"), dir / "clf.pt");
    for (int64_t B : {1, 3}) {
      for (int64_t T : {1, 9, 32}) {
        INFO(norm_position << " B=" << B << " T=" << T);
        auto ids = torch::randint(0, 99, {B, T}, torch::kLong);
        auto mask = padding_mask(B, T);
        auto types = torch::randint(0, 2, {B, T}, torch::kLong);
        auto got = loaded.forward({ids, mask, types}).toTensor();
        CHECK(got.sizes() == torch::IntArrayRef({B, 3}));
        check_close(got, model->forward(ids, mask, types));
        check_close(tuple_item(loaded.get_method("encode")({ids, mask}), 1), model->bert->pooled(ids, mask));
      }
    }
    auto labels = loaded.attr("labels").toList();
    REQUIRE(labels.size() == 3);
    CHECK(labels.get(2).toStringRef() == "neutral");
    CHECK(nlohmann::json::parse(loaded.attr("config_json").toStringRef())["labels"] == nlohmann::json(c.labels));
  }
}

TEST_CASE("exported T5 matches lmzoo's logits, encoder output and position buckets", "[export][t5]") {
  struct Variant {
    const char* name;
    bool gated;
    const char *activation, *norm_position;
    bool bias;
  };
  const Variant variants[] = {
      {"v1.0: relu, tied head (d_model^-0.5)", false, "relu", "pre", false},
      {"v1.1: geglu, untied, 3 heads of 8, 3 decoder layers", true, "geglu", "pre", false},
      {"post-norm, swiglu, biases", true, "swiglu", "post", true},
  };
  torch::NoGradGuard no_grad;
  TempDir dir;
  for (const auto& v : variants) {
    torch::manual_seed(13);
    ModelConfig c = tiny_t5_config(v.gated);
    c.activation = parse_enum<Activation>(v.activation);
    c.norm_position = parse_enum<NormPosition>(v.norm_position);
    c.bias = v.bias;
    T5 model(c);
    perturb(*model);
    model->eval();
    auto loaded = save_and_load(export_t5(model, "tok"), dir / "t5.pt");
    // Buckets beyond relative_max_distance (20) in both directions: exact equality of the bias.
    for (const std::string stack : {"encoder", "decoder"}) {
      auto expected = (stack == "encoder" ? model->encoder : model->decoder)->rel_bias(70, 90, 0);
      CHECK(torch::equal(loaded.run_method("_" + stack + "_position_bias", 70, 90).toTensor(), expected));
    }
    for (int64_t B : {1, 3}) {
      for (auto [S, T] : {std::pair<int64_t, int64_t>{1, 1}, {9, 6}, {40, 30}}) {
        INFO(v.name << " B=" << B << " S=" << S << " T=" << T);
        auto ids = torch::randint(0, 99, {B, S}, torch::kLong);
        auto mask = padding_mask(B, S);
        auto dec = torch::randint(0, 99, {B, T}, torch::kLong);
        check_close(loaded.forward({ids, mask, dec}).toTensor(), model->forward(ids, mask, dec), 1e-4);
        auto hidden = model->encode(ids, mask);
        check_close(loaded.get_method("encode")({ids, mask}).toTensor(), hidden, 1e-4);
        check_close(loaded.get_method("decode")({dec, hidden, mask}).toTensor(), model->decode(dec, hidden, mask), 1e-4);
        check_close(loaded.forward({ids, c10::IValue(), dec}).toTensor(), model->forward(ids, torch::Tensor(), dec), 1e-4);
      }
    }
    CHECK(nlohmann::json::parse(loaded.attr("config_json").toStringRef()) == nlohmann::json(c));
  }
}

TEST_CASE("exported BERT, BERT classifier and T5 run in Python's torch.jit.load and match", "[export][python]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  torch::NoGradGuard no_grad;
  torch::manual_seed(14);
  TempDir dir;
  auto save = [&](const std::string& name, const torch::Tensor& t) { save_tensor(dir / (name + ".pt"), t); };
  nlohmann::json calls = nlohmann::json::array();

  ModelConfig bc = bert_export_config();
  Bert bert(bc);
  perturb(*bert);
  bert->eval();
  export_bert(bert, "tok").save(dir / "bert.pt");
  ModelConfig cc = bert_export_config();
  cc.labels = {"no", "yes"};
  BertClassifier classifier(cc);
  perturb(*classifier);
  classifier->eval();
  export_bert_classifier(classifier, "tok").save(dir / "clf.pt");
  for (int64_t B : {1, 3}) {
    const std::string b = std::to_string(B);
    const int64_t T = 5 + 4 * B;
    auto ids = torch::randint(0, 99, {B, T}, torch::kLong), mask = padding_mask(B, T);
    auto types = torch::randint(0, 2, {B, T}, torch::kLong);
    save("ids" + b, ids), save("mask" + b, mask), save("types" + b, types);
    save("mlm" + b, bert->forward(ids, mask, types));
    save("hidden" + b, bert->hidden_states(ids, mask, types));
    save("pooled" + b, bert->pooled(ids, mask, types));
    save("class" + b, classifier->forward(ids, mask, types));
    const nlohmann::json args = {"ids" + b, "mask" + b, "types" + b};
    calls.push_back({{"model", "bert.pt"}, {"method", "forward"}, {"args", args}, {"expected", {"mlm" + b}}});
    calls.push_back(
        {{"model", "bert.pt"}, {"method", "encode"}, {"args", args}, {"expected", {"hidden" + b, "pooled" + b}}});
    calls.push_back({{"model", "clf.pt"},
                     {"method", "forward"},
                     {"args", args},
                     {"expected", {"class" + b}},
                     {"attrs", {{"labels", {"no", "yes"}}, {"config_json", nlohmann::json(cc)}}}});
  }

  ModelConfig tc = tiny_t5_config(true);
  T5 t5(tc);
  perturb(*t5);
  t5->eval();
  export_t5(t5, "tok").save(dir / "t5.pt");
  for (int64_t B : {1, 3}) {
    const std::string b = std::to_string(B);
    const int64_t S = 8 + 10 * B, T = 3 + 5 * B;
    auto ids = torch::randint(0, 99, {B, S}, torch::kLong), mask = padding_mask(B, S);
    auto dec = torch::randint(0, 99, {B, T}, torch::kLong);
    auto hidden = t5->encode(ids, mask);
    save("t5ids" + b, ids), save("t5mask" + b, mask), save("t5dec" + b, dec), save("t5hidden" + b, hidden);
    save("t5logits" + b, t5->forward(ids, mask, dec));
    calls.push_back({{"model", "t5.pt"},
                     {"method", "forward"},
                     {"args", {"t5ids" + b, "t5mask" + b, "t5dec" + b}},
                     {"expected", {"t5logits" + b}},
                     {"attrs", {{"config_json", nlohmann::json(tc)}}}});
    calls.push_back({{"model", "t5.pt"},
                     {"method", "encode"},
                     {"args", {"t5ids" + b, "t5mask" + b}},
                     {"expected", {"t5hidden" + b}}});
    calls.push_back({{"model", "t5.pt"},
                     {"method", "decode"},
                     {"args", {"t5dec" + b, "t5hidden" + b, "t5mask" + b}},
                     {"expected", {"t5logits" + b}}});
  }
  calls.push_back({{"model", "t5.pt"}, {"method", "encode"}, {"args", {"t5ids1", nullptr}}, {"expected", {"t5hidden1"}}});

  write_text(dir / "calls.json", calls.dump());
  write_text(dir / "check.py", kPythonCheck);
  const std::string cmd = "/usr/bin/python3 " + (dir / "check.py") + " " + dir.path.string() + " > " + (dir / "diff");
  REQUIRE(std::system(cmd.c_str()) == 0);
  const double diff = std::stod(read_text(dir / "diff"));
  CHECK(diff < 1e-4);  // the largest over all calls, T5's included (see check_close)
}
