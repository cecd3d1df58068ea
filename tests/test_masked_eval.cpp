// BERT evaluation tests: masked-token and pseudo-log-likelihood perplexity on models whose output
// distribution is set by hand (zero word embeddings, log-probabilities as the MLM bias), and fill-mask.
#include "tests/catch_compat.h"

#include <cmath>
#include <set>

#include "data/tokenizers/tokenizer.h"
#include "models/fill_mask.h"
#include "tests/model_fixtures.h"
#include "train/eval/masked_eval.h"

using namespace lmzoo;

namespace {
constexpr int64_t kVocab = 120;

// A Bert whose MLM logits are log_p at every position: the tied decoder (word embeddings) is zero, so the
// logits are the output bias alone. log_p undefined: uniform.
Bert fixed_output_bert(const torch::Tensor& log_p = torch::Tensor()) {
  Bert model(test::tiny_bert_config(kVocab, 16, 1, 2, 10));
  torch::NoGradGuard no_grad;
  model->word_embeddings->weight.zero_();
  model->mlm_bias.copy_(log_p.defined() ? log_p : torch::zeros({kVocab}));
  return model;
}

// log p over the vocabulary: p(id) proportional to 1 + (id % 7), so different tokens score differently.
torch::Tensor skewed_log_p() {
  auto w = torch::arange(kVocab, torch::kFloat).remainder(7) + 1;  // (V)
  return torch::log(w / w.sum());
}

TokenStream stream_of(const std::vector<int32_t>& tokens) { return TokenStream::from_tokens(tokens); }
}  // namespace

TEST_CASE("masked eval: a uniform model has masked and pseudo perplexity equal to the vocabulary size",
          "[eval][bert]") {
  torch::manual_seed(0);
  Bert model = fixed_output_bert();
  std::vector<int32_t> tokens;
  for (int i = 0; i < 200; ++i) tokens.push_back(special::kNumSpecial + (i * 7) % (kVocab - special::kNumSpecial));
  MaskedEvalOptions options;
  const SpecialIds ids = native_special_ids();
  const auto masked = masked_token_perplexity(model, stream_of(tokens), 1000, ids, options, torch::kCPU);
  CHECK(masked.ppl() == Approx(double(kVocab)).epsilon(1e-4));
  CHECK(masked.tokens > 10);
  const auto pseudo = pseudo_perplexity(model, stream_of(tokens), 1000, ids, options, torch::kCPU);
  CHECK(pseudo.ppl() == Approx(double(kVocab)).epsilon(1e-4));
  CHECK(pseudo.tokens == 200);  // every token scored once
  CHECK(pseudo.bits_per_byte() == Approx(200 * std::log(double(kVocab)) / std::log(2.0) / 1000));
}

TEST_CASE("masked eval: pseudo-perplexity equals the hand-computed exp(-PLL / N)", "[eval][bert]") {
  const auto log_p = skewed_log_p();
  Bert model = fixed_output_bert(log_p);
  // 13 tokens over two windows (8 content slots each), with a document separator that is not scored.
  const std::vector<int32_t> tokens = {110, 111, 112, 113, 110, special::kEos, 114, 115, 116, 110, 111, 119, 112};
  double pll = 0.0;
  int64_t n = 0;
  for (int32_t t : tokens) {
    if (t < special::kNumSpecial) continue;
    pll += log_p[t].item<double>();
    ++n;
  }
  for (int64_t batch_size : {1, 5, 64}) {
    MaskedEvalOptions options;
    options.batch_size = batch_size;
    const auto r = pseudo_perplexity(model, stream_of(tokens), 40, native_special_ids(), options, torch::kCPU);
    CHECK(r.tokens == n);
    CHECK(r.nll_sum == Approx(-pll).epsilon(1e-5));
    CHECK(r.ppl() == Approx(std::exp(-pll / double(n))).epsilon(1e-5));
  }
}

TEST_CASE("masked eval: masked-token perplexity is seeded, batch-independent and scores the selection",
          "[eval][bert]") {
  const auto log_p = skewed_log_p();
  Bert model = fixed_output_bert(log_p);
  const std::vector<int32_t> same(400, 113);  // one repeated token: every scored position costs -log p(113)
  MaskedEvalOptions options;
  const auto a = masked_token_perplexity(model, stream_of(same), 400, native_special_ids(), options, torch::kCPU);
  CHECK(a.ppl() == Approx(std::exp(-log_p[113].item<double>())).epsilon(1e-5));
  const double rate = double(a.tokens) / 400.0;  // ~15% selected: within 5 binomial sigmas
  CHECK(std::abs(rate - 0.15) < 5 * std::sqrt(0.15 * 0.85 / 400));
  CHECK(a.source_bytes == std::llround(400.0 * double(a.tokens) / 400.0));  // pro rata bytes

  std::vector<int32_t> varied;
  for (int i = 0; i < 300; ++i) varied.push_back(special::kNumSpecial + (i * 5) % 13);
  options.batch_size = 3;
  const auto b1 = masked_token_perplexity(model, stream_of(varied), 300, native_special_ids(), options, torch::kCPU);
  options.batch_size = 50;
  const auto b2 = masked_token_perplexity(model, stream_of(varied), 300, native_special_ids(), options, torch::kCPU);
  CHECK(b1.tokens == b2.tokens);
  CHECK(b1.nll_sum == Approx(b2.nll_sum).epsilon(1e-6));
  options.seed = 99;
  const auto other = masked_token_perplexity(model, stream_of(varied), 300, native_special_ids(), options, torch::kCPU);
  CHECK((other.tokens != b1.tokens || other.nll_sum != Approx(b1.nll_sum)));
}

TEST_CASE("fill-mask: candidates are the most likely non-special ids, with their probabilities", "[eval][bert]") {
  auto log_p = skewed_log_p();
  {
    torch::NoGradGuard no_grad;
    log_p[special::kMask] = 10.0;  // a special id, however likely, is never proposed
  }
  Bert model = fixed_output_bert(log_p);
  const auto filled = fill_masks(model, native_special_ids(), {110, special::kMask, 111, special::kMask}, 3);
  REQUIRE(filled.size() == 2);
  // Non-special ids 107..119 have weights 1 + id % 7 = 3 4 5 6 7 1 2 3 4 5 6 7 1 (sum 54): the best two are
  // 111 and 118 (7/54 each), then 110 or 117 (6/54).
  for (const auto& candidates : filled) {
    REQUIRE(candidates.size() == 3);
    CHECK(std::set<int64_t>{candidates[0].id, candidates[1].id} == std::set<int64_t>{111, 118});
    CHECK(candidates[0].probability == Approx(7.0 / 54).epsilon(1e-5));
    CHECK(candidates[1].probability == Approx(7.0 / 54).epsilon(1e-5));
    CHECK((candidates[2].id == 110 || candidates[2].id == 117));
    CHECK(candidates[2].probability == Approx(6.0 / 54).epsilon(1e-5));
  }
  CHECK_THROWS_WITH(fill_masks(model, native_special_ids(), std::vector<int64_t>(9, special::kMask), 3),
                    Catch::Contains("at most 8"));
}
