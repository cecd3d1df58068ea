// Prefix-LM batches for decoder-only and encoder-decoder models, seeded per step like CausalBatcher.
// Shapes: B batch, T context (decoder-only).
#include "data/batching/batcher_prefix.h"

#include <random>
#include <stdexcept>
#include <string>

#include "data/batching/batcher_causal.h"

namespace lmzoo {

namespace {
int64_t uniform_below(std::mt19937_64& rng, int64_t n) { return int64_t(rng() % uint64_t(n)); }
}  // namespace

Seq2SeqExample split_prefix(const std::vector<int64_t>& window, int64_t k, int64_t eos) {
  if (k < 1 || k >= int64_t(window.size())) {
    throw std::invalid_argument("prefix split " + std::to_string(k) + " outside [1, " +
                                std::to_string(window.size()) + ")");
  }
  Seq2SeqExample e;
  e.inputs.assign(window.begin(), window.begin() + k);
  e.inputs.push_back(eos);
  e.targets.assign(window.begin() + k, window.end());
  e.targets.push_back(eos);
  return e;
}

PrefixBatcher::PrefixBatcher(const TokenStream& stream, const SpecialIds& special, PrefixOptions options,
                             uint64_t seed, DataShard shard)
    : stream_(stream), special_(special), options_(options), seed_(seed), shard_(shard) {
  if (options.batch_size <= 0) throw std::invalid_argument("prefix batcher: batch_size must be positive");
  if (options.seq_len < 3) {
    throw std::invalid_argument("prefix batcher: seq_len " + std::to_string(options.seq_len) +
                                " is below 3 (a prefix token, a predicted token and </s>)");
  }
  if (stream.size() < options.seq_len + 1) {
    throw std::runtime_error("the data split has " + std::to_string(stream.size()) +
                             " tokens, fewer than one window of " + std::to_string(options.seq_len + 1) +
                             " (use a smaller --seq-len or more data)");
  }
}

PrefixLmBatch PrefixBatcher::decoder_only_batch(int64_t step, int64_t micro_step) const {
  const int64_t B = options_.batch_size, T = options_.seq_len;
  auto window = torch::empty({B, T + 1}, torch::kLong);  // (B, T+1)
  auto prefix_len = torch::empty({B}, torch::kLong);     // (B,)
  auto* data = window.data_ptr<int64_t>();
  auto* prefix = prefix_len.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    std::mt19937_64 rng(row_seed(seed_, step, global_row(shard_, micro_step, B, b)));
    stream_.read(uniform_below(rng, stream_.size() - T), T + 1, data + b * (T + 1));
    prefix[b] = 1 + uniform_below(rng, T);
  }
  PrefixLmBatch batch;
  batch.inputs = window.slice(1, 0, T).contiguous();  // (B, T)
  auto next = window.slice(1, 1, T + 1);              // (B, T): token t + 1
  auto predicted = torch::arange(1, T + 1, torch::kLong).view({1, T}) >= prefix_len.view({B, 1});  // (B, T)
  batch.targets = torch::where(predicted, next, torch::full_like(next, -1));
  batch.prefix_len = prefix_len;
  return batch;
}

Seq2SeqBatch PrefixBatcher::seq2seq_batch(int64_t step, int64_t micro_step) const {
  const int64_t W = options_.seq_len - 1;
  const int64_t eos = special_.require(special_.eos, "</s>", "prefix");
  const int64_t pad = special_.require(special_.pad, "<pad>", "prefix");
  std::vector<Seq2SeqExample> examples;
  std::vector<int64_t> window(W);
  for (int64_t b = 0; b < options_.batch_size; ++b) {
    std::mt19937_64 rng(row_seed(seed_, step, global_row(shard_, micro_step, options_.batch_size, b)));
    stream_.read(uniform_below(rng, stream_.size() - W + 1), W, window.data());
    examples.push_back(split_prefix(window, 1 + uniform_below(rng, W - 1), eos));
  }
  return collate_seq2seq(examples, pad);
}

}  // namespace lmzoo
