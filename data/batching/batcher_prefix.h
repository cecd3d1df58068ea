// Prefix-LM batches: random windows of a token stream cut at a random point into a prefix (context) and a
// continuation (predicted). Decoder-only (GPT): one window, attention bidirectional inside the prefix
// (GPT's prefix_len), loss only on the continuation. Encoder-decoder (T5 prefix_lm): the prefix goes to
// the encoder, the continuation to the decoder. Leaves out: document-aware windows.
#pragma once
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "data/batching/batcher_span.h"
#include "data/corpus/data_shard.h"
#include "data/corpus/shards.h"

namespace lmzoo {

struct PrefixOptions {
  int64_t batch_size = 8;
  // Decoder-only: the context T (windows of T + 1 tokens). Encoder-decoder: the longest encoder input
  // and decoder target, </s> included (windows of seq_len - 1 tokens).
  int64_t seq_len = 512;
};

struct PrefixLmBatch {
  torch::Tensor inputs;      // (B, T) int64: window[:T]
  torch::Tensor targets;     // (B, T) int64: window[t + 1] where t + 1 >= prefix_len, -1 inside the prefix
  torch::Tensor prefix_len;  // (B,) int64 in [1, T]: the prefix is window[:prefix_len]
};

// T5 prefix_lm split of one window at k (1 <= k < window size): inputs window[:k] eos, targets
// window[k:] eos.
Seq2SeqExample split_prefix(const std::vector<int64_t>& window, int64_t k, int64_t eos);

class PrefixBatcher {
 public:
  // Throws std::invalid_argument on bad options (seq_len below 3), std::runtime_error when the stream
  // is shorter than one window. SPECIAL gives seq2seq batches their eos and pad.
  PrefixBatcher(const TokenStream& stream, const SpecialIds& special, PrefixOptions options, uint64_t seed,
                DataShard shard = {});
  // GPT prefix-LM: windows of T + 1 tokens, prefix length uniform in [1, T] (T5's random_prefix_noise_mask
  // at density 0.5), so at least one token is predicted. Feed prefix_len to GPT's forward.
  PrefixLmBatch decoder_only_batch(int64_t step, int64_t micro_step) const;
  // T5 prefix-LM: windows of seq_len - 1 tokens split at k uniform in [1, seq_len - 2] (split_prefix),
  // padded to the longest row. Throws std::invalid_argument when the tokenizer has no eos or pad.
  Seq2SeqBatch seq2seq_batch(int64_t step, int64_t micro_step) const;
  // Both are pure functions of (seed, step, micro_step, shard).

 private:
  const TokenStream& stream_;
  SpecialIds special_;
  PrefixOptions options_;
  uint64_t seed_;
  DataShard shard_;
};

}  // namespace lmzoo
