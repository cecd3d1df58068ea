// GPT model tests: causality, init loss, KV-cache equivalence, prefix mask, parameter counts.
#include "tests/catch_compat.h"

#include <cmath>

#include "models/gpt.h"
#include "models/parameter_sizes.h"
#include "models/presets.h"
#include "tests/model_fixtures.h"
#include "train/objectives.h"

using namespace lmzoo;

namespace {
ModelConfig tiny_config() { return lmzoo::test::tiny_gpt_config(); }
}  // namespace

TEST_CASE("changing token t+1 never changes outputs at positions <= t", "[gpt]") {
  for (const std::string norm_position : {"pre", "post"}) {
    torch::manual_seed(0);
    ModelConfig c = tiny_config();
    c.norm_position = parse_enum<NormPosition>(norm_position);
    c.bias = true;
    GPT model(c);
    model->eval();
    auto idx = torch::randint(0, 99, {2, 12}, torch::kLong);
    auto base = model->forward(idx);
    for (int64_t t = 0; t + 1 < 12; ++t) {
      auto changed = idx.clone();
      changed.select(1, t + 1).fill_((changed[0][t + 1].item<int64_t>() + 1) % 99);
      auto out = model->forward(changed);
      INFO("norm_position " << norm_position << ", t " << t);
      CHECK(torch::allclose(out.slice(1, 0, t + 1), base.slice(1, 0, t + 1), 0, 0));
      CHECK_FALSE(torch::allclose(out.slice(1, t + 1, t + 2), base.slice(1, t + 1, t + 2)));
    }
  }
}

TEST_CASE("loss at initialisation is near ln(vocab)", "[gpt]") {
  torch::manual_seed(1);
  ModelConfig c = tiny_config();
  GPT model(c);
  auto x = torch::randint(0, 99, {8, 16}, torch::kLong);
  auto y = torch::randint(0, 99, {8, 16}, torch::kLong);
  const double loss = causal_lm_loss(model, {x, y}).item<double>();
  CHECK(std::abs(loss - std::log(99.0)) < 0.1);
}

TEST_CASE("KV-cached decoding equals full recompute step by step", "[gpt]") {
  torch::manual_seed(2);
  ModelConfig c = tiny_config();
  c.bias = true;
  GPT model(c);
  model->eval();
  torch::NoGradGuard no_grad;
  auto idx = torch::randint(0, 99, {3, 10}, torch::kLong);
  auto full = model->forward(idx);  // (3, 10, V)
  KVCache cache = model->new_cache();
  auto first = model->forward(idx.slice(1, 0, 4), &cache);  // prefill 4 tokens
  CHECK(torch::allclose(first, full.slice(1, 0, 4), 1e-5, 1e-5));
  for (int64_t t = 4; t < 10; ++t) {
    auto step = model->forward(idx.slice(1, t, t + 1), &cache);
    INFO("position " << t);
    CHECK(torch::allclose(step, full.slice(1, t, t + 1), 1e-5, 1e-5));
  }
  CHECK(cache[0].length() == 10);
}

TEST_CASE("prefix-LM mask is bidirectional inside the prefix and causal after it", "[gpt]") {
  torch::manual_seed(3);
  GPT model(tiny_config());
  model->eval();
  auto idx = torch::randint(0, 99, {1, 10}, torch::kLong);
  auto prefix = torch::tensor({4}, torch::kLong);
  auto base = model->forward(idx, nullptr, prefix);
  auto changed = idx.clone();
  changed[0][3] = (changed[0][3].item<int64_t>() + 1) % 99;  // last prefix token
  auto out = model->forward(changed, nullptr, prefix);
  CHECK_FALSE(torch::allclose(out[0][0], base[0][0]));  // position 0 sees position 3 inside the prefix
  auto later = idx.clone();
  later[0][6] = (later[0][6].item<int64_t>() + 1) % 99;  // a continuation token
  auto out_later = model->forward(later, nullptr, prefix);
  CHECK(torch::allclose(out_later.slice(1, 0, 6), base.slice(1, 0, 6), 0, 0));
  // Without a prefix the same model is strictly causal.
  auto causal = model->forward(changed);
  CHECK(torch::allclose(causal.slice(1, 0, 3), model->forward(idx).slice(1, 0, 3), 0, 0));
}

TEST_CASE("GPT-2 initialisation: N(0, 0.02), residual projections scaled, norms at 1", "[gpt]") {
  torch::manual_seed(4);
  ModelConfig c = tiny_config();
  c.n_layer = 8;
  c.d_model = 128;
  c.bias = true;
  GPT model(c);
  for (const auto& p : model->named_parameters()) {
    const auto& name = p.key();
    const double std = p.value().std().item<double>();
    if (name.find("c_proj.weight") != std::string::npos) {
      CHECK(std == Approx(0.02 / std::sqrt(16.0)).epsilon(0.1));
    } else if (name.find("ln_") != std::string::npos && name.find("weight") != std::string::npos) {
      CHECK(p.value().eq(1).all().item<bool>());
    } else if (name.find("bias") != std::string::npos) {
      CHECK(p.value().eq(0).all().item<bool>());
    } else {
      CHECK(std == Approx(0.02).epsilon(0.1));
    }
  }
}

TEST_CASE("parameter count formula matches the built model", "[gpt][presets]") {
  for (bool bias : {false, true}) {
    for (bool tie : {false, true}) {
      ModelConfig c = tiny_config();
      c.bias = bias;
      c.tie_embeddings = tie;
      GPT model(c);
      int64_t n = 0;
      for (const auto& p : model->parameters()) n += p.numel();
      CHECK(parameter_count(c) == n);
      CHECK(parameter_count(c, {ParameterPart::kPositionTable}) == n - c.max_seq_len * c.d_model);
    }
  }
}

TEST_CASE("gpt2 preset has GPT-2's published 124,439,808 parameters", "[gpt][presets]") {
  ModelConfig c = find_preset("gpt2").config;
  CHECK(parameter_count(c) == 124439808);
  GPT model(c);
  int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  CHECK(n == 124439808);
}

TEST_CASE("model config JSON round trip and validation", "[gpt][config]") {
  for (const auto& preset : all_presets()) {
    ModelConfig c = preset.config;
    nlohmann::json j = c;
    ModelConfig back = model_config_from_json(j);
    CHECK(nlohmann::json(back) == j);
  }
  CHECK_THROWS_WITH(model_config_from_json({{"n_layers", 3}}), Catch::Contains("unknown field 'n_layers'"));
  ModelConfig bad = tiny_config();
  bad.d_model = 30;
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("multiple of n_head"));
  CHECK_THROWS_WITH(find_preset("gpt5"), Catch::Contains("unknown preset 'gpt5'"));
}
