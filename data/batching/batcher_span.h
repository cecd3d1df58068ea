// Span-corruption batches (T5): windows of a token stream with random noise spans (T5's
// random_spans_noise_mask), each span replaced by one sentinel in the inputs and spelled out after its
// sentinel in the targets; window length chosen (random_spans_helper) so inputs fill input_length exactly.
// Also the encoder-decoder batch shared with the prefix batcher. Leaves out: document-aware windows.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include <torch/torch.h>

#include "data/corpus/data_shard.h"
#include "data/corpus/shards.h"
#include "data/tokenizers/tokenizer.h"

namespace lmzoo {

// One encoder-decoder example before collation; both sides end with </s>.
struct Seq2SeqExample {
  std::vector<int64_t> inputs, targets;
};

struct Seq2SeqBatch {
  torch::Tensor input_ids;          // (B, S) int64, the pad id at pads
  torch::Tensor attention_mask;     // (B, S) int64, 1 real / 0 pad
  torch::Tensor decoder_input_ids;  // (B, T) int64: [pad, labels[:-1]] with pads as pad, as T5
  torch::Tensor labels;             // (B, T) int64: the targets, -1 at pads
};

// Right-pads inputs to the longest input and targets to the longest target and stacks them; pad_id pads and
// starts the decoder (T5's convention).
Seq2SeqBatch collate_seq2seq(const std::vector<Seq2SeqExample>& examples, int64_t pad_id);

struct SpanOptions {
  int64_t batch_size = 8;
  int64_t input_length = 512;          // encoder length per example, </s> included (filled exactly)
  double noise_density = 0.15;         // fraction of window tokens dropped into the targets
  double mean_noise_span_length = 3.0;
};

// Noise tokens and spans for a window of `length` tokens (T5 random_spans_noise_mask): noise =
// round(length * density) clamped to [1, length - 1], spans = max(1, round(noise / mean)). Rounding is
// half to even, as tf.round and Python's round. Spans are also capped at the non-noise count, where T5
// would fail (tiny windows only).
struct NoiseCounts {
  int64_t noise_tokens = 0, noise_spans = 0;
};
NoiseCounts noise_counts(int64_t length, double noise_density, double mean_noise_span_length);

// The lengths that go together (T5 random_spans_helper / compute_input_and_target_lengths): the longest
// raw window whose corrupted inputs (non-noise + one sentinel per span + </s>) fit input_length; they
// then fill it exactly, except at density 0.5 where T5 drops one raw token if the targets would be longer
// than the inputs (the inputs are then one short).
struct SpanLengths {
  int64_t raw_length = 0;     // tokens read from the stream per example
  int64_t input_length = 0;   // corrupted inputs, </s> included
  int64_t target_length = 0;  // noise tokens + one sentinel per span + </s>
  NoiseCounts counts;         // noise_counts(raw_length)
};
// Throws std::invalid_argument on a density outside (0, 1), a mean below 1 or input_length below 2.
SpanLengths span_lengths(int64_t input_length, double noise_density, double mean_noise_span_length);

// Noise mask of `length` tokens (true = noise): spans alternate non-noise, noise, ..., starting with
// non-noise and ending with noise; span lengths are random segmentations (each a uniform composition
// of the count into noise_spans positive parts).
std::vector<bool> random_spans_noise_mask(int64_t length, double noise_density, double mean_noise_span_length,
                                          std::mt19937_64& rng);

// inputs: the non-noise tokens with each noise span replaced by its sentinel (<extra_id_i> =
// special.sentinels[i] for the i-th span), then special.eos. targets: each span's sentinel followed by the
// span, then eos. Throws std::invalid_argument on more spans than sentinels or a size mismatch.
Seq2SeqExample span_corrupt(const SpecialIds& special, const std::vector<int64_t>& tokens,
                            const std::vector<bool>& noise_mask);

class SpanBatcher {
 public:
  // Throws std::invalid_argument on bad options, on SPECIAL lacking eos or pad, or on more spans than its
  // sentinels (naming the tokenizer), std::runtime_error when the stream is shorter than one raw window.
  SpanBatcher(const TokenStream& stream, const SpecialIds& special, SpanOptions options, uint64_t seed,
              DataShard shard = {});
  // A pure function of (seed, step, micro_step, shard). Every row has exactly lengths().input_length
  // inputs (options.input_length, see span_lengths) and lengths().target_length targets: no pads.
  Seq2SeqBatch batch(int64_t step, int64_t micro_step) const;
  const SpanLengths& lengths() const { return lengths_; }

 private:
  const TokenStream& stream_;
  SpecialIds special_;
  SpanOptions options_;
  SpanLengths lengths_;
  uint64_t seed_;
  DataShard shard_;
};

}  // namespace lmzoo
