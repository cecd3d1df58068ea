// Span corruption and prefix-LM batch tests: T5's length rule, noise mask structure and rate, sentinels in
// order, inputs and targets interleaving back to the stream, exact input length, determinism; prefix
// batches (loss only after the prefix, GPT prefix attention, T5 prefix + continuation reassemble the
// window); a tiny T5 learning span corruption.
#include "tests/catch_compat.h"

#include <cmath>
#include <random>

#include "data/batching/batcher_prefix.h"
#include "data/batching/batcher_span.h"
#include "models/gpt.h"
#include "models/t5.h"
#include "tests/model_fixtures.h"

using namespace lmzoo;

namespace {
// Stream whose token at i is kNumSpecial + i % period: a window's start is read off its first token and
// contiguity is checkable. No special ids inside, so sentinels and </s> are unambiguous.
constexpr int64_t kPeriod = 4000;
TokenStream counting_stream(int64_t n) {
  std::vector<int32_t> tokens(n);
  for (int64_t i = 0; i < n; ++i) tokens[i] = int32_t(special::kNumSpecial + i % kPeriod);
  return TokenStream::from_tokens(tokens);
}

bool is_sentinel(int64_t id) { return id >= special::kSentinel0 && id < special::kSentinel0 + special::kNumSentinels; }

std::vector<int64_t> row(const torch::Tensor& t, int64_t b) {
  auto r = t[b].contiguous();
  return std::vector<int64_t>(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel());
}

// Inputs with each sentinel replaced by its span from the targets (both without the final </s>).
std::vector<int64_t> uncorrupt(const std::vector<int64_t>& inputs, const std::vector<int64_t>& targets) {
  std::vector<int64_t> out;
  for (size_t i = 0; i + 1 < inputs.size(); ++i) {
    if (!is_sentinel(inputs[i])) {
      out.push_back(inputs[i]);
      continue;
    }
    size_t j = 0;
    while (j < targets.size() && targets[j] != inputs[i]) ++j;
    for (++j; j + 1 < targets.size() && !is_sentinel(targets[j]); ++j) out.push_back(targets[j]);
  }
  return out;
}

// The window of the counting stream starting at the value of first, `length` tokens.
std::vector<int64_t> stream_window(int64_t first, int64_t length) {
  std::vector<int64_t> w(length);
  const int64_t start = first - special::kNumSpecial;
  for (int64_t i = 0; i < length; ++i) w[i] = special::kNumSpecial + (start + i) % kPeriod;
  return w;
}
}  // namespace

TEST_CASE("span: T5's length rule and noise counts", "[span]") {
  // T5 defaults: 512 inputs come from 568 raw tokens (85 noise in 28 spans) and give 114 targets.
  const SpanLengths l = span_lengths(512, 0.15, 3.0);
  CHECK(l.raw_length == 568);
  CHECK(l.input_length == 512);
  CHECK(l.target_length == 114);
  CHECK(l.counts.noise_tokens == 85);
  CHECK(l.counts.noise_spans == 28);
  // Inputs fill the input length exactly for any length and setting.
  for (double density : {0.05, 0.15, 0.3, 0.5}) {
    for (double mean : {1.0, 3.0, 8.0}) {
      for (int64_t n : {8, 31, 64, 100, 257, 1000}) {
        const SpanLengths s = span_lengths(n, density, mean);
        INFO("density " << density << ", mean " << mean << ", input length " << n);
        CHECK(s.input_length == s.raw_length - s.counts.noise_tokens + s.counts.noise_spans + 1);
        CHECK(s.target_length == s.counts.noise_tokens + s.counts.noise_spans + 1);
        if (density != 0.5) {
          CHECK(s.input_length == n);
        } else {  // T5's hack: one raw token less when the targets would outgrow the inputs
          CHECK(s.target_length <= s.input_length);
          CHECK(s.input_length >= n - 1);
          CHECK(s.input_length <= n);
        }
      }
    }
  }
  // round half to even (tf.round, Python round), clamps to [1, length - 1] and at least one span.
  CHECK(noise_counts(10, 0.25, 1.0).noise_tokens == 2);  // 2.5 -> 2
  CHECK(noise_counts(14, 0.25, 1.0).noise_tokens == 4);  // 3.5 -> 4
  CHECK(noise_counts(10, 0.15, 3.0).noise_tokens == 2);
  CHECK(noise_counts(10, 0.15, 3.0).noise_spans == 1);
  CHECK(noise_counts(3, 0.01, 3.0).noise_tokens == 1);
  CHECK(noise_counts(4, 0.99, 1.0).noise_tokens == 3);
  CHECK(noise_counts(100, 0.15, 3.0).noise_spans == 5);
  CHECK_THROWS_AS(span_lengths(512, 0.0, 3.0), std::invalid_argument);
  CHECK_THROWS_AS(span_lengths(512, 0.15, 0.5), std::invalid_argument);
}

TEST_CASE("span: noise masks alternate non-noise / noise spans with T5's counts and a uniform rate", "[span]") {
  std::mt19937_64 rng(1);
  const int64_t L = 568;
  const NoiseCounts c = noise_counts(L, 0.15, 3.0);
  std::vector<int64_t> noise_at(L, 0);
  std::vector<int64_t> span_lengths_seen;
  const int64_t draws = 2000;
  for (int64_t d = 0; d < draws; ++d) {
    const auto mask = random_spans_noise_mask(L, 0.15, 3.0, rng);
    REQUIRE(int64_t(mask.size()) == L);
    CHECK_FALSE(mask.front());  // starts with non-noise
    CHECK(mask.back());         // ends with noise
    int64_t noise = 0, spans = 0, run = 0;
    for (int64_t i = 0; i < L; ++i) {
      noise += mask[i];
      noise_at[i] += mask[i];
      if (mask[i]) {
        ++run;
        if (i == 0 || !mask[i - 1]) ++spans;
      }
      if (run > 0 && (!mask[i] || i + 1 == L)) {
        span_lengths_seen.push_back(run);
        run = 0;
      }
    }
    CHECK(noise == c.noise_tokens);
    CHECK(spans == c.noise_spans);
  }
  // Away from the ends every position is noise at the overall rate, within 5 binomial sigmas.
  const double p = double(c.noise_tokens) / L;
  for (int64_t i = 20; i < L - 20; i += 7) {
    const double tolerance = 5.0 * std::sqrt(p * (1 - p) / draws);
    INFO("position " << i);
    CHECK(std::abs(double(noise_at[i]) / draws - p) <= tolerance);
  }
  CHECK(std::abs(p - 0.15) < 0.005);
  double mean = 0;
  for (auto s : span_lengths_seen) mean += double(s) / span_lengths_seen.size();
  CHECK(mean == Approx(85.0 / 28.0).epsilon(1e-9));
  // Short inputs degenerate gracefully.
  for (int64_t n : {1, 2, 3, 5}) CHECK(random_spans_noise_mask(n, 0.15, 3.0, rng).size() == size_t(n));
}

TEST_CASE("span: corruption by hand, sentinels in order", "[span]") {
  const std::vector<int64_t> tokens = {200, 201, 202, 203, 204, 205, 206, 207};
  const std::vector<bool> mask = {false, false, true, true, false, true, false, true};
  const Seq2SeqExample e = span_corrupt(native_special_ids(), tokens, mask);
  const int64_t s0 = special::kSentinel0, eos = special::kEos;
  CHECK(e.inputs == std::vector<int64_t>{200, 201, s0, 204, s0 + 1, 206, s0 + 2, eos});
  CHECK(e.targets == std::vector<int64_t>{s0, 202, 203, s0 + 1, 205, s0 + 2, 207, eos});
  CHECK(s0 == 7);
  std::vector<int64_t> many(300, 150);
  std::vector<bool> alternating(300);
  for (size_t i = 0; i < alternating.size(); ++i) alternating[i] = i % 2;
  // 150 spans > 100 sentinels
  CHECK_THROWS_AS(span_corrupt(native_special_ids(), many, alternating), std::invalid_argument);
}

TEST_CASE("span: batches fill the input length, interleave back to the stream, sentinels in order", "[span]") {
  auto stream = counting_stream(20000);
  SpanOptions o;
  o.batch_size = 16;
  o.input_length = 128;
  SpanBatcher batcher(stream, native_special_ids(), o, 5);
  const SpanLengths& l = batcher.lengths();
  CHECK(l.input_length == 128);
  int64_t noise = 0, total = 0;
  for (int64_t step = 0; step < 20; ++step) {
    const Seq2SeqBatch b = batcher.batch(step, 0);
    REQUIRE(b.input_ids.sizes().vec() == std::vector<int64_t>{16, 128});
    REQUIRE(b.labels.sizes().vec() == std::vector<int64_t>{16, l.target_length});
    CHECK(b.attention_mask.eq(1).all().item<bool>());
    CHECK(b.labels.ne(-1).all().item<bool>());
    // decoder inputs: the labels shifted right after the start id (pad 0).
    CHECK(b.decoder_input_ids.select(1, 0).eq(special::kPad).all().item<bool>());
    CHECK(torch::equal(b.decoder_input_ids.slice(1, 1), b.labels.slice(1, 0, -1)));
    for (int64_t r = 0; r < 16; ++r) {
      const auto inputs = row(b.input_ids, r), targets = row(b.labels, r);
      CHECK(inputs.back() == special::kEos);
      CHECK(targets.back() == special::kEos);
      std::vector<int64_t> in_sentinels, target_sentinels;
      for (auto id : inputs) if (is_sentinel(id)) in_sentinels.push_back(id);
      for (auto id : targets) if (is_sentinel(id)) target_sentinels.push_back(id);
      REQUIRE(int64_t(in_sentinels.size()) == l.counts.noise_spans);
      CHECK(in_sentinels == target_sentinels);
      for (size_t i = 0; i < in_sentinels.size(); ++i) CHECK(in_sentinels[i] == special::kSentinel0 + int64_t(i));
      CHECK(targets.front() == special::kSentinel0);   // targets open with <extra_id_0>
      CHECK_FALSE(is_sentinel(inputs.front()));         // inputs open with non-noise
      const auto original = uncorrupt(inputs, targets);
      REQUIRE(int64_t(original.size()) == l.raw_length);
      CHECK(original == stream_window(original.front(), l.raw_length));
      noise += int64_t(targets.size()) - 1 - l.counts.noise_spans;
      total += l.raw_length;
    }
  }
  CHECK(std::abs(double(noise) / total - 0.15) < 0.01);
  // Pure function of (seed, step, micro, shard).
  CHECK(torch::equal(batcher.batch(3, 1).input_ids,
                     SpanBatcher(stream, native_special_ids(), o, 5).batch(3, 1).input_ids));
  CHECK(torch::equal(batcher.batch(3, 1).labels, batcher.batch(3, 1).labels));
  CHECK_FALSE(torch::equal(batcher.batch(3, 1).input_ids, batcher.batch(3, 2).input_ids));
  CHECK_FALSE(torch::equal(batcher.batch(3, 1).input_ids, batcher.batch(4, 1).input_ids));
  CHECK_FALSE(torch::equal(batcher.batch(3, 1).input_ids,
                           SpanBatcher(stream, native_special_ids(), o, 5, DataShard{1, 2}).batch(3, 1).input_ids));
  // Configurable density and span length.
  o.noise_density = 0.3;
  o.mean_noise_span_length = 5.0;
  SpanBatcher dense(stream, native_special_ids(), o, 5);
  CHECK(std::abs(dense.lengths().counts.noise_tokens - dense.lengths().raw_length * 0.3) <= 0.5);
  CHECK(dense.lengths().counts.noise_spans == std::lround(dense.lengths().counts.noise_tokens / 5.0));
  CHECK(dense.batch(0, 0).input_ids.size(1) == 128);
  // Errors: too many spans for 100 sentinels, too short a stream.
  o = SpanOptions();
  o.input_length = 4096;
  CHECK_THROWS_AS(SpanBatcher(stream, native_special_ids(), o, 5), std::invalid_argument);
  o.input_length = 512;
  auto tiny = counting_stream(100);
  CHECK_THROWS_AS(SpanBatcher(tiny, native_special_ids(), o, 5), std::runtime_error);
}

TEST_CASE("prefix: decoder-only batches predict only the continuation", "[prefix]") {
  auto stream = counting_stream(10000);
  PrefixOptions o;
  o.batch_size = 32;
  o.seq_len = 16;
  PrefixBatcher batcher(stream, native_special_ids(), o, 7);
  int64_t shortest = 16, longest = 0;
  for (int64_t step = 0; step < 10; ++step) {
    const PrefixLmBatch b = batcher.decoder_only_batch(step, 0);
    REQUIRE(b.inputs.sizes().vec() == std::vector<int64_t>{32, 16});
    REQUIRE(b.prefix_len.sizes().vec() == std::vector<int64_t>{32});
    for (int64_t r = 0; r < 32; ++r) {
      const int64_t P = b.prefix_len[r].item<int64_t>();
      shortest = std::min(shortest, P);
      longest = std::max(longest, P);
      REQUIRE(P >= 1);
      REQUIRE(P <= 16);
      const auto window = stream_window(b.inputs[r][0].item<int64_t>(), 17);
      for (int64_t t = 0; t < 16; ++t) {
        CHECK(b.inputs[r][t].item<int64_t>() == window[t]);
        // Position t predicts window[t + 1] exactly when that token lies after the prefix.
        CHECK(b.targets[r][t].item<int64_t>() == (t + 1 >= P ? window[t + 1] : -1));
      }
    }
  }
  CHECK(shortest == 1);
  CHECK(longest == 16);
  CHECK(torch::equal(batcher.decoder_only_batch(2, 1).targets,
                     PrefixBatcher(stream, native_special_ids(), o, 7).decoder_only_batch(2, 1).targets));
  CHECK_FALSE(torch::equal(batcher.decoder_only_batch(2, 1).inputs, batcher.decoder_only_batch(2, 0).inputs));
  // With GPT's prefix attention no scored position sees its target: the loss does not move when a
  // target token is changed in the inputs... and a scored position's logits ignore every later input.
  torch::manual_seed(8);
  ModelConfig c = lmzoo::test::tiny_gpt_config(kPeriod + special::kNumSpecial, 32, 4, 16);
  GPT model(c);
  model->eval();
  const PrefixLmBatch b = batcher.decoder_only_batch(0, 0);
  auto logits = model->forward(b.inputs, nullptr, b.prefix_len);
  for (int64_t r = 0; r < 4; ++r) {
    const int64_t P = b.prefix_len[r].item<int64_t>();
    for (int64_t t = std::max<int64_t>(P - 1, 0); t + 1 < 16; ++t) {  // token t + 1 is predicted at t
      auto changed = b.inputs.clone();
      changed[r][t + 1] = special::kNumSpecial;
      auto out = model->forward(changed, nullptr, b.prefix_len);
      CHECK(torch::equal(out[r].slice(0, 0, t + 1), logits[r].slice(0, 0, t + 1)));
    }
  }
}

TEST_CASE("prefix: encoder-decoder batches split a window into prefix and continuation", "[prefix]") {
  auto stream = counting_stream(10000);
  PrefixOptions o;
  o.batch_size = 32;
  o.seq_len = 12;
  PrefixBatcher batcher(stream, native_special_ids(), o, 9);
  int64_t shortest = 100, longest = 0;
  for (int64_t step = 0; step < 10; ++step) {
    const Seq2SeqBatch b = batcher.seq2seq_batch(step, 0);
    CHECK(b.input_ids.size(1) <= 12);
    CHECK(b.labels.size(1) <= 12);
    CHECK(torch::equal(b.decoder_input_ids.slice(1, 1), b.labels.slice(1, 0, -1).clamp_min(0)));
    CHECK(b.decoder_input_ids.select(1, 0).eq(special::kPad).all().item<bool>());
    for (int64_t r = 0; r < 32; ++r) {
      const int64_t S = b.attention_mask[r].sum().item<int64_t>();
      const int64_t T = b.labels[r].ne(-1).sum().item<int64_t>();
      CHECK(b.attention_mask[r].slice(0, 0, S).eq(1).all().item<bool>());  // real tokens first
      CHECK(b.input_ids[r].slice(0, S).eq(special::kPad).all().item<bool>());
      CHECK(b.labels[r].slice(0, T).eq(-1).all().item<bool>());
      CHECK(b.input_ids[r][S - 1].item<int64_t>() == special::kEos);
      CHECK(b.labels[r][T - 1].item<int64_t>() == special::kEos);
      CHECK(S + T == 12 + 1);  // (k + 1) + (11 - k + 1): the window of 11 plus two </s>
      shortest = std::min(shortest, S - 1);
      longest = std::max(longest, S - 1);
      std::vector<int64_t> joined = row(b.input_ids, r);
      joined.resize(S - 1);
      const auto continuation = row(b.labels, r);
      joined.insert(joined.end(), continuation.begin(), continuation.begin() + (T - 1));
      CHECK(joined == stream_window(joined.front(), 11));
    }
  }
  CHECK(shortest == 1);
  CHECK(longest == 10);
  CHECK(split_prefix({200, 201, 202}, 1, special::kEos).inputs == std::vector<int64_t>{200, special::kEos});
  CHECK(split_prefix({200, 201, 202}, 1, special::kEos).targets == std::vector<int64_t>{201, 202, special::kEos});
  CHECK_THROWS_AS(split_prefix({200, 201}, 2, special::kEos), std::invalid_argument);
  CHECK_THROWS_AS(PrefixBatcher(stream, native_special_ids(), PrefixOptions{4, 2}, 1), std::invalid_argument);
}

TEST_CASE("span: a tiny T5 learns span corruption on a repetitive stream", "[span][t5]") {
  torch::manual_seed(10);
  // Runs of 8 copies of one of 40 ids: a noise span is predictable from its neighbours in the inputs.
  std::vector<int32_t> tokens;
  for (int i = 0; i < 6000; ++i) tokens.push_back(special::kNumSpecial + (i / 8) * 7 % 40);
  auto stream = TokenStream::from_tokens(tokens);
  ModelConfig c = lmzoo::test::tiny_t5_config(false, special::kNumSpecial + 40);
  T5 model(c);
  model->train();
  SpanOptions o;
  o.batch_size = 32;
  o.input_length = 32;
  SpanBatcher batcher(stream, native_special_ids(), o, 11);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(3e-3).weight_decay(0.0));
  namespace F = torch::nn::functional;
  double first = 0, last = 0;
  for (int64_t step = 0; step < 120; ++step) {
    const Seq2SeqBatch b = batcher.batch(step, 0);
    auto logits = model->forward(b.input_ids, b.attention_mask, b.decoder_input_ids);
    auto loss = F::cross_entropy(logits.reshape({-1, logits.size(-1)}), b.labels.reshape({-1}),
                                 F::CrossEntropyFuncOptions().ignore_index(-1));
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    if (step < 5) first += loss.item<double>() / 5;
    if (step >= 110) last += loss.item<double>() / 10;
  }
  INFO("mean loss of the first 5 steps " << first << ", of the last 10 " << last);
  CHECK(last < 0.5 * first);
}
