// Variant matrix tests (issue 5): every switch combination builds, takes a training step that lowers the
// loss, keeps its family's attention property (causal / bidirectional) and, for decoders, gives the same
// logits with the KV cache as without; grouped-query attention against multi-head attention with the same
// weights; vocabulary padding leaves the usable vocabulary's logits unchanged.
#include "tests/catch_compat.h"

#include "models/bert.h"
#include "models/gpt.h"
#include "models/parameter_sizes.h"
#include "models/presets.h"
#include "models/registry.h"
#include "models/t5.h"
#include "tests/variant_matrix.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

int64_t module_parameters(torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

// One AdamW step on a fixed batch; returns the eval-mode loss before and after.
template <typename LossFn>
std::pair<double, double> loss_before_after_step(torch::nn::Module& model, LossFn loss_fn) {
  torch::optim::AdamW optimizer(model.parameters(), torch::optim::AdamWOptions(1e-3));
  model.eval();
  const double before = loss_fn().template item<double>();
  model.train();
  optimizer.zero_grad();
  auto loss = loss_fn();
  loss.backward();
  for (const auto& p : model.parameters()) {
    if (p.grad().defined()) REQUIRE(torch::isfinite(p.grad()).all().item<bool>());
  }
  optimizer.step();
  model.eval();
  return {before, loss_fn().template item<double>()};
}

torch::Tensor cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets) {
  return torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
}

}  // namespace

TEST_CASE("every gpt switch combination trains, stays causal and caches exactly", "[variants][gpt]") {
  for (const auto& v : switch_matrix(Arch::kGpt)) {
    INFO(v.name);
    torch::manual_seed(21);
    GPT model(v.config);
    CHECK(module_parameters(*model) == parameter_count(v.config));
    auto idx = torch::randint(0, 99, {2, 10}, torch::kLong);
    auto targets = torch::randint(0, 99, {2, 10}, torch::kLong);
    auto [before, after] = loss_before_after_step(*model, [&] { return cross_entropy(model->forward(idx), targets); });
    CHECK(after < before);

    torch::NoGradGuard no_grad;
    auto base = model->forward(idx);
    REQUIRE(base.sizes() == torch::IntArrayRef({2, 10, 99}));
    auto changed = idx.clone();
    changed.select(1, 6).copy_((idx.select(1, 6) + 1) % 99);  // a different token at position 6
    auto out = model->forward(changed);
    CHECK(torch::allclose(out.slice(1, 0, 6), base.slice(1, 0, 6), 0, 1e-6));
    CHECK_FALSE(torch::allclose(out.slice(1, 6), base.slice(1, 6), 0, 1e-4));

    KVCache cache = model->new_cache();
    auto prefill = model->forward(idx.slice(1, 0, 4), &cache);
    CHECK(torch::allclose(prefill, base.slice(1, 0, 4), 1e-5, 1e-5));
    for (int64_t t = 4; t < 10; ++t) {
      auto step = model->forward(idx.slice(1, t, t + 1), &cache);
      CHECK(torch::allclose(step, base.slice(1, t, t + 1), 1e-5, 1e-5));
    }
    CHECK(cache[0].k.size(1) == v.config.kv_heads());  // the cache holds only the key/value heads
  }
}

TEST_CASE("every bert switch combination trains and stays bidirectional under padding", "[variants][bert]") {
  for (const auto& v : switch_matrix(Arch::kBert)) {
    INFO(v.name);
    torch::manual_seed(22);
    Bert model(v.config);
    CHECK(module_parameters(*model) == parameter_count(v.config));
    auto ids = torch::randint(8, 99, {2, 10}, torch::kLong);
    auto mask = torch::ones({2, 10}, torch::kLong);
    mask[1].slice(0, 7).zero_();  // row 1: 7 real tokens, 3 pads
    auto targets = torch::randint(0, 99, {2, 10}, torch::kLong);
    auto [before, after] =
        loss_before_after_step(*model, [&] { return cross_entropy(model->forward(ids, mask), targets); });
    CHECK(after < before);

    torch::NoGradGuard no_grad;
    auto base = model->forward(ids, mask);
    REQUIRE(base.sizes() == torch::IntArrayRef({2, 10, 99}));
    auto changed = ids.clone();
    changed[0][9] = ids[0][9].item<int64_t>() == 50 ? 51 : 50;  // the last token of row 0
    auto out = model->forward(changed, mask);
    CHECK((out[0][0] - base[0][0]).abs().max().item<double>() > 1e-5);  // reaches position 0
    // Pads are never attended: changing them leaves row 1's real positions as they were.
    auto repadded = ids.clone();
    repadded[1].slice(0, 7).fill_(3);
    auto padded_out = model->forward(repadded, mask);
    CHECK(torch::allclose(padded_out[1].slice(0, 0, 7), base[1].slice(0, 0, 7), 1e-5, 1e-5));
  }
}

TEST_CASE("every t5 switch combination trains, keeps its attention properties and caches", "[variants][t5]") {
  for (const auto& v : t5_switch_matrix()) {
    INFO(v.name);
    torch::manual_seed(23);
    T5 model(v.config);
    CHECK(module_parameters(*model) == parameter_count(v.config));
    auto enc = torch::randint(8, 99, {2, 9}, torch::kLong);
    auto dec = torch::randint(8, 99, {2, 6}, torch::kLong);
    auto targets = torch::randint(0, 99, {2, 6}, torch::kLong);
    auto mask = torch::ones({2, 9}, torch::kLong);
    auto [before, after] =
        loss_before_after_step(*model, [&] { return cross_entropy(model->forward(enc, mask, dec), targets); });
    CHECK(after < before);

    torch::NoGradGuard no_grad;
    auto base = model->forward(enc, mask, dec);
    auto later_decoder = dec.clone();
    later_decoder[0][4] = dec[0][4].item<int64_t>() == 50 ? 51 : 50;
    auto out = model->forward(enc, mask, later_decoder);
    CHECK(torch::allclose(out.slice(1, 0, 4), base.slice(1, 0, 4), 0, 1e-6));  // decoder causal
    auto later_encoder = enc.clone();
    later_encoder[0][8] = enc[0][8].item<int64_t>() == 50 ? 51 : 50;
    CHECK_FALSE(torch::allclose(model->encode(later_encoder)[0][0], model->encode(enc)[0][0], 0, 1e-4));

    auto memory = model->encode(enc, mask);
    T5Cache cache = model->new_cache();
    for (int64_t t = 0; t < 6; ++t) {
      auto step = model->decode(dec.slice(1, t, t + 1), t == 0 ? memory : torch::Tensor(), mask, &cache);
      CHECK(torch::allclose(step, base.slice(1, t, t + 1), 1e-5, 1e-5));
    }
  }
}

TEST_CASE("grouped-query attention equals multi-head attention with each kv head repeated", "[variants][gqa]") {
  for (const std::string position : {"rope", "alibi", "learned"}) {
    INFO(position);
    torch::manual_seed(24);
    ModelConfig gqa_config = tiny_gpt_config();
    gqa_config.position = parse_enum<Position>(position);
    gqa_config.bias = true;
    gqa_config.n_kv_heads = 2;  // 4 query heads, 2 per kv head
    ModelConfig mha_config = gqa_config;
    mha_config.n_kv_heads = 0;
    GPT gqa(gqa_config), mha(mha_config);
    const int64_t hs = gqa_config.head_size();
    // n_kv_heads == n_head is multi-head attention: same parameters, same outputs.
    ModelConfig same_config = gqa_config;
    same_config.n_kv_heads = 4;
    GPT same(same_config);
    {
      torch::NoGradGuard no_grad;
      auto dst = mha->named_parameters();
      for (const auto& p : gqa->named_parameters()) {
        auto& target = dst[p.key()];
        if (p.key().find("c_attn") == std::string::npos) {
          target.copy_(p.value());
          continue;
        }
        auto parts = p.value().split_with_sizes({4 * hs, 2 * hs, 2 * hs}, 0);  // q, k, v rows
        auto repeat = [&](const torch::Tensor& rows) {
          auto shape = rows.sizes().vec();  // (2*hs[, C])
          shape[0] = 2 * 2 * hs;
          auto heads = rows.view({2, hs, -1}).repeat_interleave(2, 0);  // (4, hs, C or 1)
          return heads.reshape(shape);
        };
        target.copy_(torch::cat({parts[0], repeat(parts[1]), repeat(parts[2])}, 0));
      }
      auto src = mha->named_parameters();
      for (auto& p : same->named_parameters()) p.value().copy_(src[p.key()]);
    }
    torch::NoGradGuard no_grad;
    gqa->eval();
    mha->eval();
    same->eval();
    auto idx = torch::randint(0, 99, {2, 12}, torch::kLong);
    CHECK(torch::allclose(same->forward(idx), mha->forward(idx), 0, 0));
    auto expected = mha->forward(idx);
    CHECK(torch::allclose(gqa->forward(idx), expected, 1e-5, 1e-5));
    KVCache cache = gqa->new_cache();
    auto prefill = gqa->forward(idx.slice(1, 0, 5), &cache);
    CHECK(torch::allclose(prefill, expected.slice(1, 0, 5), 1e-5, 1e-5));
    CHECK(cache[0].k.size(1) == 2);
    CHECK(module_parameters(*gqa) < module_parameters(*mha));
  }
}

TEST_CASE("vocabulary padding keeps the usable vocabulary's logits", "[variants][vocab]") {
  for (const std::string arch : {"gpt", "bert"}) {
    INFO(arch);
    torch::manual_seed(25);
    ModelConfig plain_config = arch == "bert" ? tiny_bert_config() : tiny_gpt_config();
    plain_config.tie_embeddings = arch == "gpt";  // one tied, one untied head
    ModelConfig padded_config = plain_config;
    padded_config.vocab_multiple = 64;  // 99 -> 128 rows
    plain_config.arch = padded_config.arch = parse_enum<Arch>(arch);
    AnyModel plain = build_model(plain_config), padded = build_model(padded_config);
    {
      torch::NoGradGuard no_grad;
      auto src = plain.module()->named_parameters();
      for (auto& p : padded.module()->named_parameters()) {
        const auto& from = src[p.key()];
        if (p.value().sizes() == from.sizes()) {
          p.value().copy_(from);
        } else {
          REQUIRE(p.value().size(0) == 128);
          REQUIRE(from.size(0) == 99);
          p.value().slice(0, 0, 99).copy_(from);  // the padding rows keep their random init
        }
      }
    }
    CHECK(parameter_count(padded_config) - parameter_count(plain_config) ==
          (arch == "gpt" ? 29 * 32 : 29 * 32 * 2 + 29));  // gpt: tied wte; bert: embeddings, decoder, bias
    torch::NoGradGuard no_grad;
    plain.module()->eval();
    padded.module()->eval();
    auto idx = torch::randint(8, 99, {2, 8}, torch::kLong);
    auto logits = [&](const AnyModel& m) { return arch == "gpt" ? m.as<GPT>()->forward(idx) : m.as<Bert>()->forward(idx); };
    auto a = logits(plain), b = logits(padded);
    REQUIRE(b.sizes() == torch::IntArrayRef({2, 8, 99}));
    CHECK(torch::allclose(a, b, 1e-5, 1e-5));
  }
}
