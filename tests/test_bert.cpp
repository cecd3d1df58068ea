// BERT tests: bidirectionality, padding invariance, init, parameter counts, MLM masking and batches,
// loss only on selected positions, loss falling on a tiny stream.
#include "tests/catch_compat.h"

#include <array>
#include <cmath>
#include <random>

#include "data/batching/batcher_mlm.h"
#include "models/bert.h"
#include "models/bert_presets.h"
#include "models/parameter_sizes.h"
#include "tests/model_fixtures.h"
#include "train/objectives.h"

using namespace lmzoo;

namespace {
constexpr int64_t kVocab = 150;  // above the 107 special ids, so random replacement has ids to draw

ModelConfig tiny_bert(const std::string& norm_position = "post") {
  ModelConfig c = test::tiny_bert_config(kVocab);
  c.norm_eps = 1e-12;
  c.norm_position = parse_enum<NormPosition>(norm_position);
  return c;
}

int64_t count_module_parameters(torch::nn::Module& m, const std::string& skip_prefix = "") {
  int64_t n = 0;
  for (const auto& p : m.named_parameters()) {
    if (skip_prefix.empty() || p.key().rfind(skip_prefix, 0) != 0) n += p.value().numel();
  }
  return n;
}

// |observed - p| within 5 binomial standard deviations of n draws.
void check_rate(double observed, double p, int64_t n, const std::string& what) {
  const double tolerance = 5.0 * std::sqrt(p * (1.0 - p) / double(n));
  INFO(what << ": observed " << observed << ", expected " << p << " +- " << tolerance << " (n " << n << ")");
  CHECK(std::abs(observed - p) <= tolerance);
}

TokenStream random_stream(int64_t n, uint32_t seed, int64_t vocab = kVocab) {
  std::mt19937 rng(seed);
  std::vector<int32_t> tokens(n);
  for (auto& t : tokens) t = special::kNumSpecial + int32_t(rng() % uint32_t(vocab - special::kNumSpecial));
  return TokenStream::from_tokens(tokens);
}

torch::Tensor mlm_loss(const torch::Tensor& logits, const torch::Tensor& labels) {
  namespace F = torch::nn::functional;
  return F::cross_entropy(logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}),
                          F::CrossEntropyFuncOptions().ignore_index(-1));
}
}  // namespace

TEST_CASE("bert: changing a later token changes the outputs at earlier positions", "[bert]") {
  for (const std::string norm_position : {"post", "pre"}) {
    torch::manual_seed(0);
    Bert model(tiny_bert(norm_position));
    model->eval();
    auto idx = torch::randint(special::kNumSpecial, kVocab, {2, 12}, torch::kLong);
    auto base = model->forward(idx);
    for (int64_t t = 1; t < 12; ++t) {
      auto changed = idx.clone();
      changed.select(1, t).fill_(idx[0][t].item<int64_t>() == 120 ? 121 : 120);
      auto out = model->forward(changed);
      INFO("norm_position " << norm_position << ", changed position " << t);
      for (int64_t s = 0; s < t; ++s) CHECK_FALSE(torch::allclose(out.select(1, s), base.select(1, s)));
    }
  }
}

TEST_CASE("bert: pads under the attention mask leave real positions unchanged", "[bert]") {
  for (const std::string norm_position : {"post", "pre"}) {
    torch::manual_seed(1);
    Bert model(tiny_bert(norm_position));
    model->eval();
    const std::vector<int64_t> lengths = {12, 7, 3};
    auto ids = torch::randint(0, kVocab, {3, 12}, torch::kLong);  // pads hold arbitrary ids on purpose
    auto types = torch::randint(0, 2, {3, 12}, torch::kLong);
    auto mask = torch::zeros({3, 12}, torch::kLong);
    for (int64_t b = 0; b < 3; ++b) mask[b].slice(0, 0, lengths[b]).fill_(1);
    auto padded = model->hidden_states(ids, mask, types);
    auto pooled = model->pooled(ids, mask, types);
    for (int64_t b = 0; b < 3; ++b) {
      const int64_t L = lengths[b];
      auto row_ids = ids[b].slice(0, 0, L).unsqueeze(0), row_types = types[b].slice(0, 0, L).unsqueeze(0);
      auto alone = model->hidden_states(row_ids, torch::Tensor(), row_types);  // (1, L, C), no pads at all
      INFO("norm_position " << norm_position << ", row " << b);
      CHECK(torch::allclose(padded[b].slice(0, 0, L), alone[0], 0, 1e-5));
      CHECK(torch::allclose(pooled[b], model->pool(alone)[0], 0, 1e-5));
      if (L < 12) {  // the mask matters: the same pads left visible change the real positions
        auto unmasked = model->hidden_states(ids[b].unsqueeze(0), torch::Tensor(), types[b].unsqueeze(0));
        CHECK_FALSE(torch::allclose(unmasked[0].slice(0, 0, L), alone[0], 0, 1e-3));
      }
    }
  }
}

TEST_CASE("bert: BERT initialisation and the tied MLM decoder", "[bert]") {
  torch::manual_seed(2);
  ModelConfig c = tiny_bert();
  c.d_model = 128;
  Bert model(c);
  const double std = model->h[0]->as<TransformerBlockImpl>()->mlp->c_fc->weight.std().item<double>();
  CHECK(std::abs(std - 0.02) < 0.002);
  CHECK(model->mlm_bias.abs().max().item<double>() == 0.0);
  CHECK(model->pooler->bias.abs().max().item<double>() == 0.0);
  CHECK(model->emb_ln->weight.eq(1).all().item<bool>());
  CHECK(model->decoder_weight().is_same(model->word_embeddings->weight));
  auto logits = model->forward(torch::randint(0, kVocab, {2, 5}, torch::kLong));
  CHECK((logits.sizes().vec() == std::vector<int64_t>{2, 5, kVocab}));
  auto pooled = model->pooled(torch::randint(0, kVocab, {2, 5}, torch::kLong));
  CHECK((pooled.sizes().vec() == std::vector<int64_t>{2, 128}));
}

TEST_CASE("bert: parameter counts by formula and on the built model", "[bert]") {
  for (bool tied : {true, false}) {
    for (const std::string norm_position : {"post", "pre"}) {
      for (bool bias : {true, false}) {
        ModelConfig c = tiny_bert(norm_position);
        c.tie_embeddings = tied;
        c.bias = bias;
        Bert model(c);
        INFO("tied " << tied << ", " << norm_position << ", bias " << bias);
        CHECK(count_module_parameters(*model) == parameter_count(c));
        CHECK(count_module_parameters(*model, "mlm_") == parameter_count(c, {ParameterPart::kMlmHead}));
      }
    }
  }
  auto preset = [](const std::string& name) {
    for (const auto& p : bert_presets())
      if (p.name == name) return p.config;
    FAIL("no preset " << name);
    return ModelConfig{};
  };
  CHECK(bert_presets().size() == 8);  // the six BERT shapes, roberta-base, distilbert-base
  CHECK(parameter_count(preset("bert-tiny"), {ParameterPart::kMlmHead}) == 4385920);
  CHECK(parameter_count(preset("bert-large"), {ParameterPart::kMlmHead}) == 335141888);
  const ModelConfig base = preset("bert-base");
  CHECK(parameter_count(base, {ParameterPart::kMlmHead}) == 109482240);
  Bert model(base);
  CHECK(count_module_parameters(*model, "mlm_") == 109482240);
}

TEST_CASE("mlm: framing, determinism and the same windows whatever the masking rates", "[bert]") {
  auto stream = random_stream(5000, 3);
  MlmOptions o;
  o.batch_size = 4;
  o.seq_len = 20;
  o.two_segments = true;
  MlmBatcher batcher(stream, native_special_ids(), kVocab, o, 7);
  auto a = batcher.batch(3, 1);
  CHECK(torch::equal(a.input_ids, batcher.batch(3, 1).input_ids));
  CHECK(torch::equal(a.labels, batcher.batch(3, 1).labels));
  CHECK_FALSE(torch::equal(a.input_ids, batcher.batch(4, 1).input_ids));
  CHECK_FALSE(torch::equal(a.input_ids, batcher.batch(3, 0).input_ids));
  o.masking.select_prob = 0.0;
  auto original = MlmBatcher(stream, native_special_ids(), kVocab, o, 7).batch(3, 1);
  CHECK(original.labels.eq(-1).all().item<bool>());
  auto selected = a.labels.ne(-1);
  CHECK(torch::equal(a.labels.masked_select(selected), original.input_ids.masked_select(selected)));
  CHECK(torch::equal(a.input_ids.masked_select(~selected), original.input_ids.masked_select(~selected)));
  CHECK(torch::equal(a.token_type_ids, original.token_type_ids));
  CHECK(a.attention_mask.eq(1).all().item<bool>());
  for (int64_t b = 0; b < 4; ++b) {  // [CLS] A [SEP] B [SEP], types 0 through the first [SEP], 1 after
    auto ids = original.input_ids[b];
    auto types = original.token_type_ids[b];
    CHECK(ids[0].item<int64_t>() == special::kCls);
    CHECK(ids[19].item<int64_t>() == special::kSep);
    CHECK(ids.eq(special::kSep).sum().item<int64_t>() == 2);
    const int64_t first_sep = ids.eq(special::kSep).nonzero()[0][0].item<int64_t>();
    CHECK(types.slice(0, 0, first_sep + 1).eq(0).all().item<bool>());
    CHECK(types.slice(0, first_sep + 1).eq(1).all().item<bool>());
    CHECK(first_sep >= 2);
    CHECK(first_sep <= 17);
  }
}

TEST_CASE("mlm: 15% selected, 80/10/10 split, rates configurable", "[bert]") {
  const int64_t vocab = 30522;
  auto stream = random_stream(100000, 4, vocab);
  for (const auto& rates : std::vector<std::array<double, 3>>{{0.15, 0.8, 0.1}, {0.3, 0.5, 0.25}}) {
    MlmOptions o;
    o.batch_size = 16;
    o.seq_len = 128;
    o.masking.select_prob = rates[0];
    o.masking.mask_prob = rates[1];
    o.masking.random_prob = rates[2];
    MlmBatcher batcher(stream, native_special_ids(), vocab, o, 11);
    int64_t positions = 0, selected = 0, masked = 0, random = 0, kept = 0;
    for (int64_t step = 0; step < 60; ++step) {
      auto b = batcher.batch(step, 0);
      auto sel = b.labels.ne(-1);
      positions += b.attention_mask.sum().item<int64_t>() - 2 * o.batch_size;  // non-special positions
      selected += sel.sum().item<int64_t>();
      auto in = b.input_ids.masked_select(sel), label = b.labels.masked_select(sel);
      masked += in.eq(special::kMask).sum().item<int64_t>();
      kept += in.eq(label).sum().item<int64_t>();
      auto replaced = in.masked_select(in.ne(special::kMask) & in.ne(label));
      random += replaced.numel();
      if (replaced.numel()) {
        CHECK(replaced.min().item<int64_t>() >= special::kNumSpecial);
        CHECK(replaced.max().item<int64_t>() < vocab);
      }
    }
    check_rate(double(selected) / positions, rates[0], positions, "selected");
    check_rate(double(masked) / selected, rates[1], selected, "[MASK]");
    check_rate(double(random) / selected, rates[2], selected, "random");  // a random id equal to the original
    check_rate(double(kept) / selected, 1 - rates[1] - rates[2], selected, "kept");  // counts as kept: p < 4e-5
  }
}

TEST_CASE("mlm: special tokens are never selected and labels are -1 exactly off the selection", "[bert]") {
  std::mt19937_64 rng(5);
  std::mt19937 draw(6);
  int64_t selected = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int64_t> a(40);
    for (auto& t : a) t = draw() % 3 == 0 ? int64_t(draw() % special::kNumSpecial) : 107 + int64_t(draw() % 43);
    const MlmExample original = frame_segments(native_special_ids(), a, {120, special::kEos, 121});
    MlmExample e = original;
    MaskingOptions o;
    o.select_prob = 0.5;
    apply_masking(e, o, native_special_ids(), kVocab, rng);
    for (size_t i = 0; i < e.ids.size(); ++i) {
      if (native_special_ids().contains(original.ids[i])) {
        CHECK(e.labels[i] == -1);
        CHECK(e.ids[i] == original.ids[i]);
      } else if (e.labels[i] == -1) {
        CHECK(e.ids[i] == original.ids[i]);
      } else {
        CHECK(e.labels[i] == original.ids[i]);
        ++selected;
      }
    }
    CHECK(e.token_types == original.token_types);
  }
  CHECK(selected > 1000);
}

TEST_CASE("mlm: whole-word masking selects words whole at the selection rate", "[bert]") {
  auto word_start = [](int id) { return id % 4 == 0; };  // words of 1 to ~4 pieces
  auto stream = random_stream(20000, 7);
  MlmOptions o;
  o.batch_size = 16;
  o.seq_len = 64;
  o.masking.whole_word = true;
  CHECK_THROWS_AS(MlmBatcher(stream, native_special_ids(), kVocab, o, 1), std::invalid_argument);  // no predicate
  MlmBatcher batcher(stream, native_special_ids(), kVocab, o, 1, DataShard{}, word_start);
  o.masking.select_prob = 0.0;
  MlmBatcher unmasked(stream, native_special_ids(), kVocab, o, 1, DataShard{}, word_start);
  int64_t positions = 0, selected = 0;
  for (int64_t step = 0; step < 40; ++step) {
    auto labels = batcher.batch(step, 0).labels;
    auto ids = unmasked.batch(step, 0).input_ids;
    for (int64_t b = 0; b < o.batch_size; ++b) {
      for (int64_t t = 1; t + 1 < o.seq_len; ++t) {
        const bool sel = labels[b][t].item<int64_t>() != -1;
        ++positions;
        selected += sel;
        // A piece that continues a word is selected exactly when the piece before it is.
        if (t > 1 && !word_start(int(ids[b][t].item<int64_t>()))) {
          CHECK(sel == (labels[b][t - 1].item<int64_t>() != -1));
        }
      }
    }
  }
  // Words (~4 pieces, geometric) are selected together: the token rate's spread is ~2.6x a binomial's.
  const double rate = double(selected) / positions;
  INFO("whole-word selected rate " << rate);
  CHECK(std::abs(rate - 0.15) < 10 * std::sqrt(0.15 * 0.85 / positions));
}

TEST_CASE("mlm: variable-length batches are padded with the attention mask", "[bert]") {
  auto stream = random_stream(3000, 8);
  MlmOptions o;
  o.batch_size = 32;
  o.seq_len = 24;
  o.min_seq_len = 4;
  auto b = MlmBatcher(stream, native_special_ids(), kVocab, o, 2).batch(0, 0);
  const auto lengths = b.attention_mask.sum(1);
  CHECK(b.input_ids.size(1) == lengths.max().item<int64_t>());
  CHECK(lengths.min().item<int64_t>() >= 4);
  CHECK(lengths.max().item<int64_t>() <= 24);
  CHECK(lengths.min().item<int64_t>() < lengths.max().item<int64_t>());
  for (int64_t r = 0; r < o.batch_size; ++r) {
    const int64_t L = lengths[r].item<int64_t>();
    CHECK(b.attention_mask[r].slice(0, 0, L).eq(1).all().item<bool>());  // real tokens first
    CHECK(b.input_ids[r][L - 1].item<int64_t>() == special::kSep);
    CHECK(b.input_ids[r].slice(0, L).eq(special::kPad).all().item<bool>());
    CHECK(b.labels[r].slice(0, L).eq(-1).all().item<bool>());
    CHECK(b.token_type_ids[r].slice(0, L).eq(0).all().item<bool>());
  }
}

TEST_CASE("mlm: the loss counts selected positions only", "[bert]") {
  torch::manual_seed(9);
  auto stream = random_stream(3000, 10);
  MlmOptions o;
  o.batch_size = 4;
  o.seq_len = 32;
  o.min_seq_len = 8;
  auto b = MlmBatcher(stream, native_special_ids(), kVocab, o, 3).batch(0, 0);
  auto logits = torch::randn({4, b.input_ids.size(1), kVocab});
  const auto selected = b.labels.ne(-1).unsqueeze(-1);  // (B, T, 1)
  REQUIRE(selected.sum().item<int64_t>() > 0);
  const double loss = mlm_loss(logits, b.labels).item<double>();
  auto elsewhere = logits + 5.0 * torch::randn_like(logits) * (~selected);  // pads and unselected changed
  CHECK(mlm_loss(elsewhere, b.labels).item<double>() == loss);
  auto there = logits + 5.0 * torch::randn_like(logits) * selected;
  CHECK(mlm_loss(there, b.labels).item<double>() != loss);
}

TEST_CASE("bert: MLM loss falls on a tiny repetitive stream", "[bert]") {
  torch::manual_seed(12);
  // Runs of 24 copies of one of 43 ids: unigram statistics alone give ln 43 = 3.76 nats, context ~0.
  std::vector<int32_t> tokens;
  for (int i = 0; i < 4000; ++i) tokens.push_back(special::kNumSpecial + (i / 24) * 5 % 43);
  auto stream = TokenStream::from_tokens(tokens);
  ModelConfig c = tiny_bert();
  c.d_ff = 64;
  Bert model(c);
  model->train();
  MlmOptions o;
  o.batch_size = 64;
  o.seq_len = 32;
  o.min_seq_len = 16;
  MlmBatcher batcher(stream, native_special_ids(), kVocab, o, 4);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-2).weight_decay(0.01));
  double first = 0, last = 0;
  for (int64_t step = 0; step < 100; ++step) {
    auto b = batcher.batch(step, 0);
    auto loss = mlm_loss(model->forward(b.input_ids, b.attention_mask, b.token_type_ids), b.labels);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    if (step < 5) first += loss.item<double>() / 5;
    if (step >= 90) last += loss.item<double>() / 10;
  }
  INFO("mean loss of the first 5 steps " << first << ", of the last 10 " << last);
  CHECK(std::abs(first - std::log(double(kVocab))) < 1.0);
  CHECK(last < 0.4 * first);
  CHECK(last < std::log(43.0) - 1.0);  // below the unigram floor: the encoder reads the context
}

TEST_CASE("mlm: the trainer's loss (head on selected positions only) equals the full-logits loss", "[bert]") {
  torch::manual_seed(21);
  auto stream = random_stream(2000, 11);
  MlmOptions o;
  o.batch_size = 4;
  o.seq_len = 24;
  o.min_seq_len = 6;
  auto b = MlmBatcher(stream, native_special_ids(), kVocab, o, 5).batch(1, 0);
  Bert model(tiny_bert());
  model->eval();
  const double full = mlm_loss(model->forward(b.input_ids, b.attention_mask, b.token_type_ids), b.labels).item<double>();
  const double picked =
      masked_lm_loss(model, {b.input_ids, b.attention_mask, b.token_type_ids, b.labels}).item<double>();
  CHECK(picked == Approx(full).epsilon(1e-5));
  // The positions handed in (as the trainer's batches carry them) pick the same rows.
  const auto positions = torch::nonzero(b.labels.reshape({-1}) >= 0).squeeze(1);
  CHECK(masked_lm_loss(model, {b.input_ids, b.attention_mask, b.token_type_ids, b.labels, positions}).item<double>() ==
        picked);
  auto none = torch::full_like(b.labels, -1);
  auto zero = masked_lm_loss(model, {b.input_ids, b.attention_mask, b.token_type_ids, none});
  CHECK(zero.item<double>() == 0.0);
  CHECK(zero.requires_grad());
}
