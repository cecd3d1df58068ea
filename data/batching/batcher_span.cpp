// Span corruption as T5's t5.data.preprocessors (random_spans_noise_mask, _random_segmentation,
// noise_span_to_unique_sentinel, random_spans_helper), with the tokenizer's sentinel ids (lmzoo's: upward from 7).
// Random numbers come straight from mt19937_64 bits, so batches are the same under any standard library.
#include "data/batching/batcher_span.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "data/batching/batcher_causal.h"

namespace lmzoo {

namespace {
int64_t uniform_below(std::mt19937_64& rng, int64_t n) { return int64_t(rng() % uint64_t(n)); }
int64_t round_half_even(double x) { return int64_t(std::nearbyint(x)); }  // default mode: to nearest even

// Lengths of num_segments positive parts summing to num_items, uniformly among such compositions
// (T5 _random_segmentation: a shuffled marker per item after the first says "starts a segment").
std::vector<int64_t> random_segmentation(int64_t num_items, int64_t num_segments, std::mt19937_64& rng) {
  std::vector<char> starts(num_items - 1, 0);
  std::fill(starts.begin(), starts.begin() + (num_segments - 1), 1);
  for (int64_t i = int64_t(starts.size()) - 1; i > 0; --i) std::swap(starts[i], starts[uniform_below(rng, i + 1)]);
  std::vector<int64_t> lengths{1};
  for (char s : starts) {
    if (s) {
      lengths.push_back(1);
    } else {
      ++lengths.back();
    }
  }
  return lengths;
}
}  // namespace

Seq2SeqBatch collate_seq2seq(const std::vector<Seq2SeqExample>& examples, int64_t pad_id) {
  const int64_t B = int64_t(examples.size());
  int64_t S = 0, T = 0;
  for (const auto& e : examples) {
    S = std::max(S, int64_t(e.inputs.size()));
    T = std::max(T, int64_t(e.targets.size()));
  }
  Seq2SeqBatch batch;
  batch.input_ids = torch::full({B, S}, pad_id, torch::kLong);          // (B, S)
  batch.attention_mask = torch::zeros({B, S}, torch::kLong);           // (B, S)
  batch.decoder_input_ids = torch::full({B, T}, pad_id, torch::kLong);  // (B, T)
  batch.labels = torch::full({B, T}, -1, torch::kLong);                // (B, T)
  auto* ids = batch.input_ids.data_ptr<int64_t>();
  auto* mask = batch.attention_mask.data_ptr<int64_t>();
  auto* dec = batch.decoder_input_ids.data_ptr<int64_t>();
  auto* labels = batch.labels.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    const auto& e = examples[b];
    std::copy(e.inputs.begin(), e.inputs.end(), ids + b * S);
    std::fill(mask + b * S, mask + b * S + e.inputs.size(), 1);
    std::copy(e.targets.begin(), e.targets.end(), labels + b * T);
    // Shifted right as HF's _shift_right of the padded labels: dec[0] = kPad, dec[t] = targets[t - 1].
    const int64_t shifted = std::min<int64_t>(int64_t(e.targets.size()), T - 1);
    std::copy(e.targets.begin(), e.targets.begin() + shifted, dec + b * T + 1);
  }
  return batch;
}

NoiseCounts noise_counts(int64_t length, double noise_density, double mean_noise_span_length) {
  length = std::max<int64_t>(length, 2);
  NoiseCounts c;
  c.noise_tokens = std::min(std::max<int64_t>(round_half_even(double(length) * noise_density), 1), length - 1);
  c.noise_spans = std::max<int64_t>(round_half_even(double(c.noise_tokens) / mean_noise_span_length), 1);
  c.noise_spans = std::min(c.noise_spans, length - c.noise_tokens);  // T5 would fail here; tiny windows only
  return c;
}

SpanLengths span_lengths(int64_t input_length, double noise_density, double mean_noise_span_length) {
  if (!(noise_density > 0.0 && noise_density < 1.0)) {
    throw std::invalid_argument("span corruption: noise_density must lie in (0, 1)");
  }
  if (!(mean_noise_span_length >= 1.0)) {
    throw std::invalid_argument("span corruption: mean_noise_span_length must be >= 1");
  }
  if (input_length < 2) throw std::invalid_argument("span corruption: input_length must be >= 2");
  auto inputs_targets = [&](int64_t tokens) {
    const NoiseCounts c = noise_counts(tokens, noise_density, mean_noise_span_length);
    return std::make_pair(tokens - c.noise_tokens + c.noise_spans + 1, c.noise_tokens + c.noise_spans + 1);
  };
  int64_t tokens = input_length - 1;
  while (inputs_targets(tokens + 1).first <= input_length) ++tokens;
  SpanLengths l;
  l.raw_length = tokens;
  std::tie(l.input_length, l.target_length) = inputs_targets(tokens);
  // T5's "minor hack": at density 0.5 keep the targets no longer than the inputs (a round number).
  if (noise_density == 0.5 && l.target_length > l.input_length) {
    --l.raw_length;
    std::tie(l.input_length, l.target_length) = inputs_targets(l.raw_length);
  }
  l.counts = noise_counts(l.raw_length, noise_density, mean_noise_span_length);
  return l;
}

std::vector<bool> random_spans_noise_mask(int64_t length, double noise_density, double mean_noise_span_length,
                                          std::mt19937_64& rng) {
  const int64_t orig_length = length;
  length = std::max<int64_t>(length, 2);
  const NoiseCounts c = noise_counts(length, noise_density, mean_noise_span_length);
  const auto noise = random_segmentation(c.noise_tokens, c.noise_spans, rng);
  const auto nonnoise = random_segmentation(length - c.noise_tokens, c.noise_spans, rng);
  std::vector<bool> mask;
  mask.reserve(length);
  for (int64_t s = 0; s < c.noise_spans; ++s) {
    mask.insert(mask.end(), nonnoise[s], false);
    mask.insert(mask.end(), noise[s], true);
  }
  mask.resize(orig_length);
  return mask;
}

Seq2SeqExample span_corrupt(const SpecialIds& special, const std::vector<int64_t>& tokens,
                            const std::vector<bool>& noise_mask) {
  if (tokens.size() != noise_mask.size()) {
    throw std::invalid_argument("span corruption: " + std::to_string(tokens.size()) + " tokens but a mask of " +
                                std::to_string(noise_mask.size()));
  }
  Seq2SeqExample e;
  int64_t spans = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!noise_mask[i]) {
      e.inputs.push_back(tokens[i]);
      continue;
    }
    if (i == 0 || !noise_mask[i - 1]) {  // a span starts: one sentinel on both sides
      if (spans == int64_t(special.sentinels.size())) {
        throw std::invalid_argument("span corruption: more than " + std::to_string(special.sentinels.size()) +
                                    " noise spans (sentinels); use shorter inputs or longer spans");
      }
      const int64_t sentinel = special.sentinels[size_t(spans++)];
      e.inputs.push_back(sentinel);
      e.targets.push_back(sentinel);
    }
    e.targets.push_back(tokens[i]);
  }
  e.inputs.push_back(special.eos);
  e.targets.push_back(special.eos);
  return e;
}

SpanBatcher::SpanBatcher(const TokenStream& stream, const SpecialIds& special, SpanOptions options, uint64_t seed,
                         DataShard shard)
    : stream_(stream),
      special_(special),
      options_(options),
      lengths_(span_lengths(options.input_length, options.noise_density, options.mean_noise_span_length)),
      seed_(seed),
      shard_(shard) {
  if (options.batch_size <= 0) throw std::invalid_argument("span batcher: batch_size must be positive");
  special.require(special.eos, "</s>", "span");
  special.require(special.pad, "<pad>", "span");
  if (special.sentinels.empty()) {
    throw std::invalid_argument("objective span needs sentinel tokens (<extra_id_0> ...); the " + special.tokenizer +
                                " tokenizer has none");
  }
  if (lengths_.counts.noise_spans > int64_t(special.sentinels.size())) {
    throw std::invalid_argument("span batcher: input_length " + std::to_string(options.input_length) + " gives " +
                                std::to_string(lengths_.counts.noise_spans) + " noise spans, more than the " +
                                std::to_string(special.sentinels.size()) + " sentinels of the " + special.tokenizer +
                                " tokenizer; use a shorter input length, lower density or longer spans");
  }
  if (stream.size() < lengths_.raw_length) {
    throw std::runtime_error("the data split has " + std::to_string(stream.size()) +
                             " tokens, fewer than one span-corruption window of " +
                             std::to_string(lengths_.raw_length) + " (use a smaller --seq-len or more data)");
  }
}

Seq2SeqBatch SpanBatcher::batch(int64_t step, int64_t micro_step) const {
  const int64_t L = lengths_.raw_length;
  std::vector<Seq2SeqExample> examples;
  std::vector<int64_t> window(L);
  for (int64_t b = 0; b < options_.batch_size; ++b) {
    const uint64_t seed = row_seed(seed_, step, global_row(shard_, micro_step, options_.batch_size, b));
    std::mt19937_64 window_rng(seed), noise_rng(mix_seed(seed, 1));
    stream_.read(uniform_below(window_rng, stream_.size() - L + 1), L, window.data());
    const auto mask = random_spans_noise_mask(L, options_.noise_density, options_.mean_noise_span_length, noise_rng);
    examples.push_back(span_corrupt(special_, window, mask));
  }
  return collate_seq2seq(examples, special_.pad);
}

}  // namespace lmzoo
