// Decoding tests: cache reordering equals full recompute (GPT, T5), beam search with one beam equals greedy,
// beam search beats greedy on a constructed chain, length penalty, n-best order, </s> stopping, early
// stopping, returned log-probs equal full recomputes, batched T5 beams equal one input at a time.
#include "tests/catch_compat.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "models/beam_search.h"
#include "models/generation.h"
#include "models/memory_estimate.h"
#include "tests/model_fixtures.h"
#include "train/device/device_peak.h"

using namespace lmzoo;
using lmzoo::test::tiny_gpt_config;
using lmzoo::test::tiny_t5_config;

namespace {

constexpr int64_t kEos = 3;

// A Markov chain as a beam decoder: the next token's log-probs depend only on the last token (row V: the
// start). rows[r] gives probabilities of some tokens; the rest of the row's mass is spread evenly.
class MarkovDecoder : public BeamDecoder {
 public:
  MarkovDecoder(int64_t vocab, const std::map<int64_t, std::map<int64_t, double>>& rows, int64_t batch = 1)
      : batch_(batch), table_(torch::empty({vocab + 1, vocab}, torch::kDouble)) {
    for (int64_t r = 0; r <= vocab; ++r) {
      std::map<int64_t, double> given;
      if (rows.count(r)) given = rows.at(r);
      double used = 0;
      for (const auto& kv : given) used += kv.second;
      const double rest =
          given.size() < size_t(vocab) ? std::max(0.0, 1.0 - used) / double(vocab - int64_t(given.size())) : 0.0;
      for (int64_t t = 0; t < vocab; ++t) table_[r][t] = std::log(given.count(t) ? given[t] : rest);
    }
  }
  torch::Tensor start() override {
    ++calls;
    return table_[table_.size(0) - 1].unsqueeze(0).repeat({batch_, 1}).to(torch::kFloat);  // (B, V)
  }
  torch::Tensor step(const torch::Tensor& parents, const torch::Tensor& tokens) override {
    ++calls;
    return table_.index_select(0, tokens).to(torch::kFloat);  // (N, V)
  }
  double log_prob(int64_t from, int64_t to) const { return table_[from][to].item<double>(); }
  int64_t start_row() const { return table_.size(0) - 1; }
  // Greedy decoding of the chain: tokens and their summed log-probability.
  std::pair<std::vector<int64_t>, double> greedy(int64_t max_new_tokens, int64_t eos) const {
    std::vector<int64_t> tokens;
    double total = 0;
    int64_t row = start_row();
    for (int64_t i = 0; i < max_new_tokens; ++i) {
      const int64_t next = table_[row].argmax().item<int64_t>();
      total += log_prob(row, next);
      tokens.push_back(next);
      if (next == eos) break;
      row = next;
    }
    return {tokens, total};
  }
  int64_t calls = 0;

 private:
  int64_t batch_;
  torch::Tensor table_;  // (V + 1, V) log-probs
};

// Sum of log p(tokens | prompt) under a full GPT forward pass without cache.
double gpt_log_prob(GPT& model, const std::vector<int64_t>& prompt, const std::vector<int64_t>& tokens) {
  std::vector<int64_t> all = prompt;
  all.insert(all.end(), tokens.begin(), tokens.end());
  auto logits = model->forward(torch::tensor(all, torch::kLong).view({1, -1}))[0];  // (L, V)
  auto log_probs = torch::log_softmax(logits.to(torch::kDouble), -1);
  double total = 0;
  for (size_t i = 0; i < tokens.size(); ++i) total += log_probs[prompt.size() + i - 1][tokens[i]].item<double>();
  return total;
}

// Sum of log p(tokens | input) under a full T5 forward pass (decoder input: start id 0, tokens shifted).
double t5_log_prob(T5& model, const std::vector<int64_t>& input, const std::vector<int64_t>& tokens) {
  std::vector<int64_t> decoder_input = {0};
  decoder_input.insert(decoder_input.end(), tokens.begin(), tokens.end() - 1);
  auto logits = model->forward(torch::tensor(input, torch::kLong).view({1, -1}), torch::Tensor(),
                               torch::tensor(decoder_input, torch::kLong).view({1, -1}))[0];  // (T, V)
  auto log_probs = torch::log_softmax(logits.to(torch::kDouble), -1);
  double total = 0;
  for (size_t i = 0; i < tokens.size(); ++i) total += log_probs[i][tokens[i]].item<double>();
  return total;
}

void check_n_best(const std::vector<Hypothesis>& hyps, size_t expected, double alpha) {
  REQUIRE(hyps.size() == expected);
  std::set<std::vector<int64_t>> distinct;
  for (size_t i = 0; i < hyps.size(); ++i) {
    distinct.insert(hyps[i].tokens);
    CHECK(hyps[i].score == Approx(hyps[i].log_prob / length_penalty(int64_t(hyps[i].tokens.size()), alpha)));
    if (i > 0) CHECK(hyps[i - 1].score >= hyps[i].score);
  }
  CHECK(distinct.size() == hyps.size());
}

}  // namespace

TEST_CASE("generate: GPT cache reordered by beam index equals full recompute step by step", "[generate][gpt]") {
  torch::manual_seed(2);
  ModelConfig c = tiny_gpt_config();
  c.bias = true;
  GPT model(c);
  model->eval();
  torch::NoGradGuard no_grad;
  auto idx = torch::randint(0, 99, {3, 10}, torch::kLong);
  KVCache cache = model->new_cache();
  model->forward(idx.slice(1, 0, 4), &cache);  // prefill 4 tokens of 3 rows
  // Expand 3 rows to 5 (as beam search's first step does), then reorder again midway.
  auto rows = torch::tensor(std::vector<int64_t>{2, 0, 0, 1, 2}, torch::kLong);
  reorder_cache(cache, rows);
  auto seqs = idx.index_select(0, rows).clone();  // (5, 10)
  for (int64_t t = 4; t < 10; ++t) {
    if (t == 7) {
      auto again = torch::tensor(std::vector<int64_t>{4, 4, 1, 0, 3}, torch::kLong);
      reorder_cache(cache, again);
      // Positions before t follow the reordered rows; later positions keep their own tokens.
      seqs.slice(1, 0, t).copy_(seqs.index_select(0, again).slice(1, 0, t).clone());
    }
    auto step = model->forward(seqs.slice(1, t, t + 1), &cache);  // (5, 1, V)
    auto full = model->forward(seqs.slice(1, 0, t + 1));          // (5, t + 1, V)
    INFO("step " << t);
    CHECK(torch::allclose(step.select(1, 0), full.select(1, t), 1e-5, 1e-5));
  }
}

TEST_CASE("generate: T5 cache reordered by beam index equals full recompute step by step", "[generate][t5]") {
  for (bool gated : {false, true}) {
    torch::manual_seed(3);
    T5 model(tiny_t5_config(gated));
    model->eval();
    torch::NoGradGuard no_grad;
    auto ids = torch::randint(10, 99, {2, 8}, torch::kLong);
    auto mask = torch::ones({2, 8}, torch::kLong);
    mask[1].slice(0, 5).fill_(0);
    auto dec = torch::randint(10, 99, {2, 9}, torch::kLong);
    T5Cache cache = model->new_cache();
    model->decode(dec.slice(1, 0, 3), model->encode(ids, mask), mask, &cache);  // 3 cached positions, 2 rows
    // Expand 2 inputs to 5 rows: self and cross keys/values and the encoder output follow the rows.
    auto rows = torch::tensor(std::vector<int64_t>{1, 1, 0, 0, 1}, torch::kLong);
    reorder_cache(cache, rows, /*cross=*/true);
    auto row_mask = mask.index_select(0, rows);
    auto row_enc = model->encode(ids.index_select(0, rows), row_mask);
    auto seqs = dec.index_select(0, rows).clone();  // (5, 9)
    for (int64_t t = 3; t < 9; ++t) {
      if (t == 6) {  // reorder within each input's rows: self keys/values only
        auto again = torch::tensor(std::vector<int64_t>{4, 0, 3, 2, 1}, torch::kLong);
        reorder_cache(cache, again, /*cross=*/false);
        seqs.slice(1, 0, t).copy_(seqs.index_select(0, again).slice(1, 0, t).clone());
      }
      auto step = model->decode(seqs.slice(1, t, t + 1), torch::Tensor(), row_mask, &cache);  // (5, 1, V)
      auto full = model->decode(seqs.slice(1, 0, t + 1), row_enc, row_mask);                 // (5, t + 1, V)
      INFO("gated " << gated << ", step " << t);
      CHECK(torch::allclose(step.select(1, 0), full.select(1, t), 1e-5, 1e-5));
    }
    CHECK(cache.cross[0].k.size(0) == 5);
    CHECK(cache.length() == 9);
  }
}

TEST_CASE("generate: length penalty is ((5 + len) / 6)^alpha", "[generate]") {
  CHECK(length_penalty(1, 0.6) == Approx(1.0));
  CHECK(length_penalty(7, 0.6) == Approx(std::pow(2.0, 0.6)));
  CHECK(length_penalty(10, 1.0) == Approx(2.5));
  CHECK(length_penalty(13, 0.5) == Approx(std::sqrt(3.0)));
  CHECK(length_penalty(40, 0.0) == Approx(1.0));
  CHECK(BeamSearchOptions{}.length_penalty == 0.6);
  CHECK(BeamSearchOptions{}.num_beams == 4);
}

TEST_CASE("generate: beam search options are validated", "[generate]") {
  BeamSearchOptions o;
  o.num_beams = 0;
  CHECK_THROWS_AS(o.validate(), std::invalid_argument);
  o.num_beams = 2;
  o.num_return = 3;
  CHECK_THROWS_AS(o.validate(), std::invalid_argument);
  o.num_return = 0;
  CHECK_THROWS_AS(o.validate(), std::invalid_argument);
  o.num_return = 2;
  CHECK_NOTHROW(o.validate());
  o.max_new_tokens = -1;
  CHECK_THROWS_AS(o.validate(), std::invalid_argument);
  o.max_new_tokens = 0;
  MarkovDecoder chain(10, {});
  const auto empty = beam_search(chain, 1, o);
  REQUIRE(empty.size() == 1);
  CHECK(empty[0].size() == 1);
  CHECK(empty[0][0].tokens.empty());
}

TEST_CASE("generate: on a constructed chain beam search finds a likelier sequence than greedy", "[generate]") {
  // Start: 5 (0.5) or 6 (0.4). After 5 nothing is likely (best 7, 0.15); after 6, </s> has 0.9.
  // Greedy: 5 7 (log-prob -2.59); the best sequence is 6 </s> (-1.02).
  const std::map<int64_t, std::map<int64_t, double>> rows = {{10, {{5, 0.5}, {6, 0.4}}},
                                                             {5, {{7, 0.15}}},
                                                             {6, {{kEos, 0.9}}}};
  MarkovDecoder chain(10, rows);
  const auto greedy = chain.greedy(2, kEos);
  CHECK(greedy.first == std::vector<int64_t>{5, 7});
  CHECK(greedy.second == Approx(std::log(0.5) + std::log(0.15)));
  BeamSearchOptions o;
  o.num_beams = 2;
  o.max_new_tokens = 2;
  o.length_penalty = 0.0;
  o.eos_id = kEos;
  const auto beams = beam_search(chain, 1, o)[0];
  REQUIRE(beams.size() == 1);
  CHECK(beams[0].tokens == std::vector<int64_t>{6, kEos});
  CHECK(beams[0].log_prob == Approx(std::log(0.4) + std::log(0.9)));
  CHECK(beams[0].log_prob > greedy.second + 1.0);
  // One beam follows greedy.
  o.num_beams = 1;
  const auto one = beam_search(chain, 1, o)[0];
  REQUIRE(one.size() == 1);
  CHECK(one[0].tokens == greedy.first);
  CHECK(one[0].log_prob == Approx(greedy.second));
}

TEST_CASE("generate: the length penalty decides between a short and a long hypothesis", "[generate]") {
  // Start: </s> or 5 (0.5 each, nothing else possible); after 5, </s> has 0.95.
  // Short: [</s>], log-prob -0.693, length 1; long: [5 </s>], log-prob -0.744, length 2.
  MarkovDecoder chain(10, {{10, {{kEos, 0.5}, {5, 0.5}}}, {5, {{kEos, 0.95}}}});
  BeamSearchOptions o;
  o.num_beams = 2;
  o.num_return = 2;
  o.max_new_tokens = 5;
  o.eos_id = kEos;
  o.length_penalty = 0.0;
  auto hyps = beam_search(chain, 1, o)[0];
  check_n_best(hyps, 2, 0.0);
  CHECK(hyps[0].tokens == std::vector<int64_t>{kEos});
  CHECK(hyps[1].tokens == std::vector<int64_t>{5, kEos});
  CHECK(hyps[0].score == Approx(std::log(0.5)));
  o.length_penalty = 1.0;  // long: -0.744 / (7 / 6) = -0.638 beats short: -0.693 / 1
  hyps = beam_search(chain, 1, o)[0];
  check_n_best(hyps, 2, 1.0);
  CHECK(hyps[0].tokens == std::vector<int64_t>{5, kEos});
  CHECK(hyps[0].score == Approx((std::log(0.5) + std::log(0.95)) / (7.0 / 6.0)));
  CHECK(hyps[1].tokens == std::vector<int64_t>{kEos});
}

TEST_CASE("generate: beam search stops at </s> before the length limit", "[generate]") {
  MarkovDecoder chain(10, {{10, {{5, 0.6}, {6, 0.4}}}, {5, {{kEos, 0.9}}}, {6, {{kEos, 0.9}}}});
  BeamSearchOptions o;
  o.num_beams = 2;
  o.num_return = 2;
  o.max_new_tokens = 50;
  o.eos_id = kEos;
  const auto hyps = beam_search(chain, 1, o)[0];
  check_n_best(hyps, 2, o.length_penalty);
  CHECK(hyps[0].tokens == std::vector<int64_t>{5, kEos});
  CHECK(hyps[1].tokens == std::vector<int64_t>{6, kEos});
  // Both finished at step 2 and no live beam could catch up: the search ended there.
  CHECK(chain.calls == 2);
}

TEST_CASE("generate: early stopping ends an input once it has num_beams finished hypotheses", "[generate]") {
  // Every state: </s> 0.5, 5 0.3, 6 0.2 (nothing else). With alpha 1 long live beams could still win, so
  // without early stopping the search goes on.
  std::map<int64_t, std::map<int64_t, double>> rows;
  for (int64_t r = 0; r <= 10; ++r) rows[r] = {{kEos, 0.5}, {5, 0.3}, {6, 0.2}};
  BeamSearchOptions o;
  o.num_beams = 2;
  o.max_new_tokens = 30;
  o.eos_id = kEos;
  o.length_penalty = 1.0;
  o.early_stopping = true;
  MarkovDecoder early_chain(10, rows);
  const auto early = beam_search(early_chain, 1, o)[0];
  o.early_stopping = false;
  MarkovDecoder full_chain(10, rows);
  const auto full = beam_search(full_chain, 1, o)[0];
  CHECK(early_chain.calls == 2);  // step 1: </s>; step 2: 5 </s> - two finished
  CHECK(full_chain.calls > early_chain.calls);
  REQUIRE(early.size() == 1);
  REQUIRE(full.size() == 1);
  CHECK(early[0].tokens.back() == kEos);
  CHECK(full[0].score >= early[0].score);
}

TEST_CASE("generate: GPT beam search with one beam equals greedy decoding", "[generate][gpt]") {
  torch::manual_seed(7);
  GPT model(tiny_gpt_config());  // context 16: 5 + 20 tokens re-encode the window on the way
  const std::vector<int64_t> prompt = {11, 12, 13, 14, 15};
  SamplingOptions greedy;
  greedy.temperature = 0.0;
  greedy.max_new_tokens = 20;
  const auto expected = generate_tokens(model, prompt, greedy);
  BeamSearchOptions o;
  o.num_beams = 1;
  o.max_new_tokens = 20;
  const auto beams = beam_search_gpt(model, prompt, o);
  REQUIRE(beams.size() == 1);
  CHECK(beams[0].tokens == expected);
  // With </s> and early stopping one beam stops where greedy stops.
  greedy.eos_id = expected[3];
  o.eos_id = expected[3];
  o.early_stopping = true;
  const auto stopped = generate_tokens(model, prompt, greedy);
  const auto stopped_beams = beam_search_gpt(model, prompt, o);
  REQUIRE(stopped_beams.size() == 1);
  CHECK(stopped_beams[0].tokens == stopped);
  CHECK(stopped.size() <= 4);
}

TEST_CASE("generate: GPT n-best hypotheses are ordered and scored by full recomputes", "[generate][gpt]") {
  torch::manual_seed(8);
  GPT model(tiny_gpt_config());
  torch::NoGradGuard no_grad;
  const std::vector<int64_t> prompt = {20, 21, 22};
  BeamSearchOptions o;
  o.num_beams = 4;
  o.num_return = 4;
  o.max_new_tokens = 10;
  o.eos_id = kEos;
  const auto hyps = beam_search_gpt(model, prompt, o);
  check_n_best(hyps, 4, o.length_penalty);
  for (const auto& h : hyps) {
    CHECK(h.log_prob == Approx(gpt_log_prob(model, prompt, h.tokens)).margin(1e-4));
    CHECK((h.tokens.size() == 10 || h.tokens.back() == kEos));
  }
  o.num_return = 1;
  const auto best = beam_search_gpt(model, prompt, o);
  REQUIRE(best.size() == 1);
  CHECK(best[0].tokens == hyps[0].tokens);
  CHECK_THROWS_AS(beam_search_gpt(model, {}, o), std::invalid_argument);
}

TEST_CASE("generate: T5 beam search with one beam equals greedy decoding", "[generate][t5]") {
  torch::manual_seed(5);
  T5 model(tiny_t5_config(true));
  const std::vector<int64_t> input = {20, 21, 22, 23, 24, 25, kEos};
  SamplingOptions greedy;
  greedy.temperature = 0.0;
  greedy.max_new_tokens = 10;
  const auto expected = generate_t5_tokens(model, input, greedy);
  BeamSearchOptions o;
  o.num_beams = 1;
  o.max_new_tokens = 10;
  const auto beams = beam_search_t5(model, {input}, o);
  REQUIRE(beams.size() == 1);
  REQUIRE(beams[0].size() == 1);
  CHECK(beams[0][0].tokens == expected);
  greedy.eos_id = expected[3];
  o.eos_id = expected[3];
  o.early_stopping = true;
  const auto stopped = generate_t5_tokens(model, input, greedy);
  CHECK(beam_search_t5(model, {input}, o)[0][0].tokens == stopped);
}

TEST_CASE("generate: batched T5 beams equal one input at a time and full recomputes", "[generate][t5]") {
  for (bool gated : {false, true}) {
    torch::manual_seed(9);
    T5 model(tiny_t5_config(gated));
    torch::NoGradGuard no_grad;
    const std::vector<std::vector<int64_t>> inputs = {{30, 31, 32, kEos}, {40, 41, 42, 43, 44, 45, 46, kEos}};
    BeamSearchOptions o;
    o.num_beams = 3;
    o.num_return = 3;
    o.max_new_tokens = 8;
    o.eos_id = kEos;
    const auto batched = beam_search_t5(model, inputs, o);
    REQUIRE(batched.size() == 2);
    for (size_t b = 0; b < inputs.size(); ++b) {
      INFO("gated " << gated << ", input " << b);
      check_n_best(batched[b], 3, o.length_penalty);
      const auto alone = beam_search_t5(model, {inputs[b]}, o)[0];
      REQUIRE(alone.size() == batched[b].size());
      for (size_t i = 0; i < alone.size(); ++i) {
        CHECK(alone[i].tokens == batched[b][i].tokens);
        CHECK(alone[i].log_prob == Approx(batched[b][i].log_prob).margin(1e-4));
        CHECK(batched[b][i].log_prob == Approx(t5_log_prob(model, inputs[b], batched[b][i].tokens)).margin(1e-4));
      }
    }
  }
  T5 model(tiny_t5_config());
  CHECK_THROWS_AS(beam_search_t5(model, {{}}, BeamSearchOptions{}), std::invalid_argument);
}

TEST_CASE("generate: a temperature near zero samples the largest logit, with finite probabilities", "[generate]") {
  const torch::Tensor logits = torch::tensor({1.0f, 3.0f, 2.5f, -1.0f, 3.0f - 1e-6f});
  auto generator = at::make_generator<at::CPUGeneratorImpl>(7);
  SamplingOptions o;
  // logits / 1e-45 overflows fp32 (every positive logit +inf: softmax's inf - inf is NaN); scaled after the
  // largest is subtracted, in fp64, the largest stays at 0 and the others go to -inf or far below.
  for (double temperature : {1e-45, 1e-300, 4.9e-324}) {
    o.temperature = temperature;
    for (int64_t top_k : {0, 2}) {
      for (double top_p : {1.0, 0.5}) {
        o.top_k = top_k;
        o.top_p = top_p;
        for (int i = 0; i < 20; ++i) CHECK(sample_next_token(logits, o, generator) == 1);
      }
    }
  }
  // A huge temperature flattens the distribution: every token is drawn.
  o.temperature = 1e300;
  o.top_k = 0;
  o.top_p = 1.0;
  std::set<int64_t> drawn;
  for (int i = 0; i < 400; ++i) drawn.insert(sample_next_token(logits, o, generator));
  CHECK(drawn.size() == 5);
}

TEST_CASE("generate: a t5 answer to a long input stays within the memory estimate", "[generate][t5][memory]") {
  // The encoder's scores over Te x Te positions dominate: the relative position bias must cost one (nh, Te, Te)
  // table (it cost several (Te, Te) int64 tensors of positions and buckets before), as the estimate counts.
  count_cpu_tensor_bytes();
  torch::manual_seed(3);
  const ModelConfig config = tiny_t5_config();
  T5 model(config);
  const int64_t encoder_length = 1200;
  std::vector<int64_t> input(size_t(encoder_length), 0);
  for (int64_t i = 0; i < encoder_length; ++i) input[size_t(i)] = 3 + (i * 7) % 90;
  SamplingOptions greedy;
  greedy.temperature = 0.0;
  greedy.max_new_tokens = 3;
  generate_t5_tokens(model, input, greedy);
  Workload w;  // as lmzoo generate asks (train/eval/text_generation.cpp)
  w.use = MemoryUse::kInference;
  w.length = 1;
  w.cached = greedy.max_new_tokens;
  w.encoder_length = encoder_length;
  const MemoryEstimate estimate = estimate_memory(config, w);
  const double peak = double(peak_device_memory_bytes(torch::kCPU));
  INFO("tensors' peak " << peak << " bytes, estimate " << estimate.running());
  CHECK(peak <= estimate.running());
  CHECK(peak >= 0.5 * estimate.running());  // the estimate is the peak's size, not a loose ceiling
}
