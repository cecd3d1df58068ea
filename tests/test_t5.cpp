// T5 tests: relative position buckets, encoder bidirectional, decoder causal, encoder padding ignored,
// cached decoding equals full recompute, golden logits against an independent reference (HF T5 math),
// T5 init, parameter counts (built model, formula, released sizes), config validation.
#include "tests/catch_compat.h"

#include <cmath>
#include <string>

#include "models/generation.h"
#include "models/parameter_sizes.h"
#include "models/t5.h"
#include "models/t5_presets.h"
#include "tests/model_fixtures.h"

using namespace lmzoo;
using lmzoo::test::tiny_t5_config;

namespace {
int64_t count_module_parameters(torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

const ModelConfig& t5_preset(const std::string& name) {
  for (const auto& p : t5_presets())
    if (p.name == name) return p.config;
  throw std::runtime_error("no preset " + name);
}

std::vector<int64_t> buckets(const std::vector<int64_t>& relative, bool bidirectional, int64_t n = 32,
                             int64_t max_distance = 128) {
  auto b = relative_position_bucket(torch::tensor(relative, torch::kLong), bidirectional, n, max_distance);
  return std::vector<int64_t>(b.data_ptr<int64_t>(), b.data_ptr<int64_t>() + b.numel());
}

// Deterministic weights by name, mirrored by the Python reference that produced the golden numbers:
// v = sin(1.7 i + (sum of the name's chars mod 97)); norms 1 + 0.1 v; shared / lm_head v; rel_bias 0.5 v;
// other matrices 0.5 / sqrt(fan_in) v.
void set_golden_weights(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  for (auto& item : model.named_parameters()) {
    const auto& name = item.key();
    auto& p = item.value();
    int64_t s = 0;
    for (unsigned char ch : name) s += ch;
    auto v = torch::sin(torch::arange(p.numel(), torch::kDouble) * 1.7 + double(s % 97)).view(p.sizes());
    if (p.dim() == 1) {
      v = 1.0 + 0.1 * v;
    } else if (name == "shared.weight" || name == "lm_head.weight") {
    } else if (name.find("rel_bias") != std::string::npos) {
      v = 0.5 * v;
    } else {
      v = 0.5 / std::sqrt(double(p.size(1))) * v;
    }
    p.copy_(v.to(p.scalar_type()));
  }
}
}  // namespace

TEST_CASE("t5: relative position buckets match T5 (hand-computed values)", "[t5]") {
  // key - query; negative: the key is in the past.
  const std::vector<int64_t> rel = {0, -1, 1, -7, 7, -8, 8, -11, -16, 16, 20, -32, -64, -100, -127, -128, -1000, 1000, 5};
  // Bidirectional, 32 buckets: 16 per direction, 0..7 exact, 8..15 log-spaced up to 128; the future +16.
  // e.g. -16: 8 + floor(8 * ln(16/8) / ln(128/8)) = 10; +20: 16 + 8 + floor(8 * ln 2.5 / ln 16) = 26.
  CHECK(buckets(rel, true) ==
        std::vector<int64_t>{0, 1, 17, 7, 23, 8, 24, 8, 10, 26, 26, 12, 14, 15, 15, 15, 15, 31, 21});
  // Causal, 32 buckets for the past only, 0..15 exact, 16..31 log-spaced; every future key in bucket 0.
  // e.g. -32: 16 + floor(16 * ln 2 / ln 8) = 21; -100: 16 + floor(16 * ln 6.25 / ln 8) = 30.
  CHECK(buckets(rel, false) ==
        std::vector<int64_t>{0, 1, 0, 7, 0, 8, 0, 11, 16, 0, 0, 21, 26, 30, 31, 31, 31, 0, 0});
  // Checksums of HF's _relative_position_bucket over -300..300 (computed with PyTorch 1.13).
  auto r = torch::arange(-300, 301, torch::kLong);
  auto bi = relative_position_bucket(r, true), causal = relative_position_bucket(r, false);
  CHECK(bi.sum().item<int64_t>() == 13190);
  CHECK((bi * r).sum().item<int64_t>() == 722400);
  CHECK(causal.sum().item<int64_t>() == 8398);
  CHECK((causal * r).sum().item<int64_t>() == -1371993);
  // Small tables: 8 buckets, max distance 20.
  CHECK(buckets({-1, -2, -3, -5, -19, -20, 1, 2, 3, 30}, true, 8, 20) ==
        std::vector<int64_t>{1, 2, 2, 2, 3, 3, 5, 6, 6, 7});
}

TEST_CASE("t5: the position bias module looks buckets up per head, with a query offset", "[t5]") {
  torch::manual_seed(0);
  RelativePositionBias bias(3, 8, 20, /*bidirectional=*/false);
  bias->weight.data().normal_();
  auto full = bias(6, 6);  // (1, nh, T, S)
  CHECK(full.sizes().vec() == std::vector<int64_t>{1, 3, 6, 6});
  for (int64_t q = 0; q < 6; ++q) {
    for (int64_t k = 0; k < 6; ++k) {
      const int64_t b = buckets({k - q}, false, 8, 20)[0];
      CHECK(torch::equal(full[0].select(1, q).select(1, k), bias->weight[b]));
    }
  }
  CHECK(torch::equal(bias(2, 6, 4), full.slice(2, 4, 6)));  // queries 4, 5 against keys 0..5
}

TEST_CASE("t5: encoder is bidirectional, decoder is causal", "[t5]") {
  for (bool gated : {false, true}) {
    torch::manual_seed(1);
    T5 model(tiny_t5_config(gated));
    model->eval();
    auto ids = torch::randint(10, 99, {2, 9}, torch::kLong);
    auto dec = torch::randint(10, 99, {2, 7}, torch::kLong);
    auto enc = model->encode(ids);
    auto logits = model->forward(ids, torch::Tensor(), dec);
    CHECK(logits.sizes().vec() == std::vector<int64_t>{2, 7, 99});
    for (int64_t t = 0; t < 9; ++t) {  // every encoder position sees every input token
      auto changed = ids.clone();
      changed.select(1, t).fill_(ids[0][t].item<int64_t>() == 50 ? 51 : 50);
      auto out = model->encode(changed);
      INFO("gated " << gated << ", changed input " << t);
      for (int64_t s = 0; s < 9; ++s) {
        if (s != t) CHECK_FALSE(torch::allclose(out.select(1, s), enc.select(1, s)));
      }
      CHECK_FALSE(torch::allclose(model->forward(changed, torch::Tensor(), dec), logits));
    }
    for (int64_t t = 1; t < 7; ++t) {  // decoder token t changes logits >= t only
      auto changed = dec.clone();
      changed.select(1, t).fill_(dec[0][t].item<int64_t>() == 50 ? 51 : 50);
      auto out = model->forward(ids, torch::Tensor(), changed);
      INFO("gated " << gated << ", changed decoder token " << t);
      CHECK(torch::equal(out.slice(1, 0, t), logits.slice(1, 0, t)));
      for (int64_t s = t; s < 7; ++s) CHECK_FALSE(torch::allclose(out.select(1, s), logits.select(1, s)));
    }
  }
}

TEST_CASE("t5: encoder pads under the attention mask change nothing", "[t5]") {
  for (bool gated : {false, true}) {
    torch::manual_seed(2);
    T5 model(tiny_t5_config(gated));
    model->eval();
    const std::vector<int64_t> lengths = {9, 5, 2};
    auto ids = torch::randint(0, 99, {3, 9}, torch::kLong);  // pads hold arbitrary ids on purpose
    auto mask = torch::zeros({3, 9}, torch::kLong);
    for (int64_t b = 0; b < 3; ++b) mask[b].slice(0, 0, lengths[b]).fill_(1);
    auto dec = torch::randint(0, 99, {3, 6}, torch::kLong);
    auto padded = model->forward(ids, mask, dec);
    for (int64_t b = 0; b < 3; ++b) {
      const int64_t L = lengths[b];
      auto alone = model->forward(ids[b].slice(0, 0, L).unsqueeze(0), torch::Tensor(), dec[b].unsqueeze(0));
      INFO("gated " << gated << ", row " << b << ", max |difference| "
                    << (padded[b] - alone[0]).abs().max().item<double>() << ", max |logit| "
                    << alone.abs().max().item<double>());
      CHECK(torch::allclose(padded[b], alone[0], 1e-5, 1e-5));
      // The encoder output at real positions is unchanged as well.
      auto enc = model->encode(ids, mask)[b].slice(0, 0, L);
      CHECK(torch::allclose(enc, model->encode(ids[b].slice(0, 0, L).unsqueeze(0))[0], 0, 1e-5));
      if (L < 9) {  // the same pads left visible do change the logits
        auto unmasked = model->forward(ids[b].unsqueeze(0), torch::Tensor(), dec[b].unsqueeze(0));
        CHECK_FALSE(torch::allclose(unmasked[0], alone[0], 0, 1e-3));
      }
    }
    // Appending masked pads to a full batch leaves the logits unchanged.
    auto longer = torch::cat({ids, torch::full({3, 4}, 0, torch::kLong)}, 1);
    auto longer_mask = torch::cat({mask, torch::zeros({3, 4}, torch::kLong)}, 1);
    CHECK(torch::allclose(model->forward(longer, longer_mask, dec), padded, 0, 1e-5));
  }
}

TEST_CASE("t5: cached decoding equals full recompute step by step", "[t5]") {
  for (bool gated : {false, true}) {
    torch::manual_seed(3);
    T5 model(tiny_t5_config(gated));
    model->eval();
    torch::NoGradGuard no_grad;
    auto ids = torch::randint(10, 99, {2, 8}, torch::kLong);
    auto mask = torch::ones({2, 8}, torch::kLong);
    mask[1].slice(0, 5).fill_(0);
    auto dec = torch::randint(10, 99, {2, 12}, torch::kLong);
    auto enc = model->encode(ids, mask);
    auto full = model->decode(dec, enc, mask);
    CHECK(torch::allclose(full, model->forward(ids, mask, dec), 0, 1e-6));
    T5Cache cache = model->new_cache();
    for (int64_t t = 0; t < 12; ++t) {
      auto step = model->decode(dec.slice(1, t, t + 1), t == 0 ? enc : torch::Tensor(), mask, &cache);
      INFO("gated " << gated << ", step " << t);
      CHECK(torch::allclose(step.select(1, 0), full.select(1, t), 0, 1e-5));
      CHECK(cache.length() == t + 1);
    }
    CHECK(cache.self.size() == size_t(model->config().decoder_layers()));
    CHECK(cache.cross[0].k.sizes().vec() == std::vector<int64_t>{2, model->config().n_head, 8, 8});
    // Several tokens at once after a cached prefix.
    T5Cache chunked = model->new_cache();
    model->decode(dec.slice(1, 0, 5), enc, mask, &chunked);
    auto rest = model->decode(dec.slice(1, 5, 12), enc, mask, &chunked);
    CHECK(torch::allclose(rest, full.slice(1, 5, 12), 0, 1e-5));
    // A cache is tied to its encoder output.
    CHECK_THROWS(model->decode(dec.slice(1, 0, 1), enc.clone(), mask, &chunked));
  }
}

TEST_CASE("t5: greedy generation with the cache equals argmax over full recomputes", "[t5]") {
  torch::manual_seed(5);
  T5 model(tiny_t5_config(true));
  model->eval();
  const std::vector<int64_t> input = {20, 21, 22, 23, 24, 25};
  SamplingOptions o;
  o.temperature = 0.0;
  o.max_new_tokens = 10;
  const auto generated = generate_t5_tokens(model, input, o);
  REQUIRE(generated.size() == 10);
  torch::NoGradGuard no_grad;
  auto ids = torch::tensor(input, torch::kLong).view({1, -1});
  std::vector<int64_t> decoder = {0};
  for (int64_t i = 0; i < 10; ++i) {
    auto dec = torch::tensor(decoder, torch::kLong).view({1, -1});
    const int64_t next = model->forward(ids, torch::Tensor(), dec)[0][-1].argmax().item<int64_t>();
    CHECK(generated[i] == next);
    decoder.push_back(next);
  }
  o.eos_id = generated[3];  // stops after the first occurrence of eos_id
  const auto stopped = generate_t5_tokens(model, input, o);
  CHECK(stopped.back() == generated[3]);
  CHECK(stopped.size() <= 4);
  CHECK_THROWS_AS(generate_t5_tokens(model, {}, o), std::invalid_argument);
}

TEST_CASE("t5: golden logits from fixed weights match an independent reference of HF T5", "[t5]") {
  // From tests/t5_reference.py (HF modeling_t5 math in float64) on the same weights and inputs.
  struct Golden {
    bool gated;
    double sum, abs_sum;
    std::vector<double> row0_pos2, row1_pos5;  // logits [0, 2, 0:4] and [1, 5, 90:94]
  };
  const std::vector<Golden> golden = {
      {false, -2.9241463414146684, 2782.11703750965, {3.505219, -3.280452, 0.078624, 3.194556},
       {-2.805448, 3.310483, -0.811203, -2.424256}},
      {true, -33.39904712037865, 15810.60730008316, {-5.118297, -15.448797, 21.995867, -8.581346},
       {9.816609, 10.578995, -21.373997, 12.771764}},
  };
  auto ids = torch::tensor({11, 25, 37, 42, 58, 63, 71, 88, 90, 14, 12, 13, 98, 47, 5, 6, 0, 0, 0, 0},
                           torch::kLong).view({2, 10});
  auto mask = torch::ones({2, 10}, torch::kLong);
  mask[1].slice(0, 6).fill_(0);
  auto dec = torch::tensor({0, 31, 32, 33, 34, 35, 0, 17, 18, 19, 20, 21}, torch::kLong).view({2, 6});
  for (const auto& g : golden) {
    T5 model(tiny_t5_config(g.gated));
    set_golden_weights(*model);
    model->eval();
    auto logits = model->forward(ids, mask, dec).to(torch::kDouble);
    INFO("gated " << g.gated);
    const double scale = g.gated ? 20.0 : 4.0;  // typical logit size: float32 against float64
    CHECK(logits.sum().item<double>() == Approx(g.sum).margin(1e-3 * scale));
    CHECK(logits.abs().sum().item<double>() == Approx(g.abs_sum).epsilon(1e-5));
    for (int64_t j = 0; j < 4; ++j) {
      CHECK(logits[0][2][j].item<double>() == Approx(g.row0_pos2[j]).margin(1e-4 * scale));
      CHECK(logits[1][5][90 + j].item<double>() == Approx(g.row1_pos5[j]).margin(1e-4 * scale));
    }
  }
}

TEST_CASE("t5: HF T5 initialisation", "[t5]") {
  torch::manual_seed(4);
  ModelConfig c = tiny_t5_config(true);
  c.d_model = 128;
  c.n_head = 4;
  c.head_dim = 48;  // attn_dim 192
  c.d_ff = 256;
  c.vocab_size = 512;
  T5 model(c);
  auto stdev = [](const torch::Tensor& t) { return t.std().item<double>(); };
  auto near = [](double observed, double expected) { return std::abs(observed / expected - 1.0) < 0.05; };
  CHECK(near(stdev(model->shared->weight), 1.0));
  CHECK(near(stdev(model->lm_head->weight), 1.0));
  for (auto* stack : {model->encoder.get(), model->decoder.get()}) {
    CHECK(near(stdev(stack->rel_bias->weight), std::pow(128.0, -0.5)) == true);
    CHECK(stack->ln_f->weight.eq(1).all().item<bool>());
  }
  auto& enc = *model->encoder->h[0]->as<TransformerBlockImpl>();
  auto& dec = *model->decoder->h[2]->as<DecoderBlockImpl>();
  for (auto* attn : {enc.attn.get(), dec.attn.get()}) {
    const auto& w = attn->c_attn->weight;  // rows [q; k; v]
    CHECK(w.sizes().vec() == std::vector<int64_t>{3 * 192, 128});
    CHECK(near(stdev(w.slice(0, 0, 192)), std::pow(128.0 * 48, -0.5)));
    CHECK(near(stdev(w.slice(0, 192, 576)), std::pow(128.0, -0.5)));
    CHECK(near(stdev(attn->c_proj->weight), std::pow(192.0, -0.5)));
    CHECK_FALSE(attn->c_attn->bias.defined());
  }
  CHECK(near(stdev(dec.cross_attn->c_q->weight), std::pow(128.0 * 48, -0.5)));
  CHECK(near(stdev(dec.cross_attn->c_kv->weight), std::pow(128.0, -0.5)));
  CHECK(near(stdev(dec.cross_attn->c_proj->weight), std::pow(192.0, -0.5)));
  for (auto* mlp : {enc.mlp.get(), dec.mlp.get()}) {
    CHECK(near(stdev(mlp->c_fc->weight), std::pow(128.0, -0.5)));
    CHECK(near(stdev(mlp->c_fc_lin->weight), std::pow(128.0, -0.5)));
    CHECK(near(stdev(mlp->c_proj->weight), std::pow(256.0, -0.5)));
  }
  CHECK(dec.ln_3->weight.eq(1).all().item<bool>());
  CHECK(model->decoder->h->size() == 3);
  CHECK(model->encoder->h->size() == 2);
  T5 tied(tiny_t5_config(false));
  CHECK(tied->lm_head_weight().is_same(tied->shared->weight));
  CHECK_FALSE(tied->encoder->h[0]->as<TransformerBlockImpl>()->mlp->c_fc_lin);
}

TEST_CASE("t5: parameter counts by formula, on the built model and as released", "[t5]") {
  for (bool gated : {false, true}) {
    for (bool tied : {true, false}) {
      for (bool bias : {false, true}) {
        ModelConfig c = tiny_t5_config(gated);
        c.tie_embeddings = tied;
        c.bias = bias;
        T5 model(c);
        INFO("gated " << gated << ", tied " << tied << ", bias " << bias);
        CHECK(count_module_parameters(*model) == parameter_count(c));
      }
    }
  }
  CHECK(t5_presets().size() == 5);
  // Released sizes (HF model cards / num_parameters()): the formula and, for the small ones, the module.
  const ModelConfig small = t5_preset("t5-small");  // a copy: g++ 14 warns of a dangling reference otherwise
  CHECK(parameter_count(small) == 60506624);
  {
    T5 model(small);
    CHECK(count_module_parameters(*model) == 60506624);
  }
  CHECK(parameter_count(t5_preset("t5-base")) == 222903552);
  CHECK(parameter_count(t5_preset("t5-large")) == 737668096);
  // v1.1: 32128 * d twice (untied) + per layer 4 * d * 64 nh attention, 3 * d * ff gated FFN, norms;
  // small: 2 * 16,449,536 + 8 * (786,432 + 1,572,864 + 1,024) + 8 * (2 * 786,432 + 1,572,864 + 1,536)
  //        + 2 * (32 * 6 + 512) = 76,961,152.
  const ModelConfig v11_small = t5_preset("t5-v1_1-small");
  CHECK(parameter_count(v11_small) == 76961152);
  {
    T5 model(v11_small);
    CHECK(count_module_parameters(*model) == 76961152);
  }
  CHECK(parameter_count(t5_preset("t5-v1_1-base")) == 247577856);
  for (const auto& p : t5_presets()) CHECK_NOTHROW(p.config.validate());
}

TEST_CASE("t5: config fields, JSON round trip and validation", "[t5]") {
  ModelConfig c = t5_preset("t5-v1_1-small");
  CHECK(c.head_size() == 64);
  CHECK(c.attn_dim() == 384);
  CHECK(c.decoder_layers() == 8);
  CHECK(c.attention_scale() == 1.0);
  const nlohmann::json j = c;
  const ModelConfig back = model_config_from_json(j);
  CHECK(nlohmann::json(back) == j);
  CHECK(j.at("head_dim") == 64);
  CHECK(j.at("activation") == "geglu");
  // A version-1 GPT config (no T5 fields) still loads, with the defaults.
  const ModelConfig old = model_config_from_json({{"format_version", 1}, {"arch", "gpt"}, {"vocab_size", 99}});
  CHECK_NOTHROW(old.validate());
  CHECK(old.head_size() == old.d_model / old.n_head);
  CHECK(old.attention_scale() == 1.0 / std::sqrt(double(old.head_size())));
  auto rejects = [](ModelConfig bad, const std::string& fragment) {
    try {
      bad.validate();
    } catch (const std::invalid_argument& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(fragment) != std::string::npos);
      return;
    }
    FAIL("accepted a config that should fail with '" << fragment << "'");
  };
  ModelConfig bad = tiny_t5_config();
  bad.position = Position::kLearned;  // every position scheme serves T5 as well
  CHECK_NOTHROW(bad.validate());
  bad = tiny_t5_config();
  bad.init = InitScheme::kGpt2;
  rejects(bad, "arch t5 needs init 't5'");
  bad = tiny_t5_config();
  bad.relative_buckets = 7;
  rejects(bad, "relative_buckets");
  bad = tiny_t5_config();
  bad.relative_max_distance = 4;
  rejects(bad, "relative_max_distance");
  ModelConfig gpt = lmzoo::test::tiny_gpt_config();
  gpt.activation = Activation::kSwiglu;  // gated feed-forwards and relative positions serve every family
  gpt.position = Position::kRelative;
  CHECK_NOTHROW(gpt.validate());
  gpt = lmzoo::test::tiny_gpt_config();
  gpt.head_dim = 16;
  rejects(gpt, "for arch t5 only");
  gpt = lmzoo::test::tiny_gpt_config();
  gpt.n_decoder_layer = 2;
  rejects(gpt, "n_decoder_layer");
  ModelConfig odd = tiny_t5_config();
  odd.n_head = 5;  // d_model 32 is no multiple of 5: fine with an explicit head_dim
  rejects(odd, "multiple of n_head");
  odd.head_dim = 8;
  CHECK_NOTHROW(odd.validate());
}
