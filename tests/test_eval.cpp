// Perplexity tests: a uniform model's perplexity is the vocabulary size; the sliding window scores
// every token once with the context the stride allows (checked against brute force).
#include "tests/catch_compat.h"

#include <cmath>

#include "tests/model_fixtures.h"
#include "train/eval/evaluator.h"

using namespace lmzoo;

namespace {
ModelConfig eval_config() { return lmzoo::test::tiny_gpt_config(37, 16, 2, 8); }

std::vector<int32_t> random_tokens(int64_t n, int64_t vocab) {
  auto t = torch::randint(0, vocab, {n}, torch::kInt);
  return std::vector<int32_t>(t.data_ptr<int32_t>(), t.data_ptr<int32_t>() + n);
}
}  // namespace

TEST_CASE("a model with uniform output has perplexity equal to the vocabulary size", "[eval]") {
  torch::manual_seed(0);
  GPT model(eval_config());
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.zero_();  // zero embeddings -> zero logits -> uniform
  }
  auto stream = TokenStream::from_tokens(random_tokens(50, 37));
  PerplexityOptions options;
  options.stride = 3;
  const auto r = sliding_window_perplexity(model, stream, /*source_bytes=*/120, options, torch::kCPU);
  CHECK(r.tokens == 49);
  CHECK(r.ppl() == Approx(37.0).epsilon(1e-5));  // fp32 log-softmax
  CHECK(r.bits_per_byte() == Approx(49 * std::log2(37.0) / 120.0).epsilon(1e-5));
  const auto j = r.to_json();
  for (const char* key : {"tokens", "nll", "ppl", "bpb"}) CHECK(j.contains(key));
}

TEST_CASE("sliding window scores each token once with as much left context as the stride allows", "[eval]") {
  torch::manual_seed(1);
  const ModelConfig c = eval_config();
  GPT model(c);
  model->eval();
  torch::NoGradGuard no_grad;
  const auto tokens = random_tokens(30, c.vocab_size);
  auto all = torch::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()), torch::kLong);
  const int64_t L = c.max_seq_len;
  for (int64_t stride : {1, 3, 8}) {
    // Brute force: token j is predicted from the window that scores it. Windows start at
    // 0, s, 2s, ...; window b covers inputs [b, b+L) and scores targets not scored before.
    double expected = 0.0;
    int64_t scored_until = 1;
    for (int64_t begin = 0; scored_until < 30; begin += stride) {
      const int64_t end = std::min<int64_t>(begin + L + 1, 30);
      for (int64_t j = scored_until; j < end; ++j) {
        auto logits = model->forward(all.slice(0, begin, j).unsqueeze(0));  // (1, j-begin, V)
        expected -= torch::log_softmax(logits[0][-1], 0)[all[j].item<int64_t>()].item<double>();
      }
      scored_until = end;
    }
    PerplexityOptions options;
    options.stride = stride;
    options.batch_size = 3;
    const auto r = sliding_window_perplexity(model, TokenStream::from_tokens(tokens), 0, options, torch::kCPU);
    INFO("stride " << stride);
    CHECK(r.tokens == 29);
    CHECK(r.nll_sum == Approx(expected).epsilon(1e-5));
  }
}
