// Causal-LM batches drawn uniformly from the token stream (nanoGPT's get_batch), seeded per row; mix_seed.
#include "data/batching/batcher_causal.h"

#include <random>
#include <stdexcept>

namespace lmzoo {

uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (uint64_t v : {a, b, c, d}) {
    x ^= v + 0x9E3779B97F4A7C15ull + (x << 6) + (x >> 2);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
  }
  return x;
}

CausalBatcher::CausalBatcher(const TokenStream& stream, int64_t batch_size, int64_t seq_len, uint64_t seed,
                             DataShard shard)
    : stream_(stream), batch_size_(batch_size), seq_len_(seq_len), seed_(seed), shard_(shard) {
  if (stream.size() < seq_len + 1) {
    throw std::runtime_error("the data split has " + std::to_string(stream.size()) +
                             " tokens, fewer than one window of " + std::to_string(seq_len + 1) +
                             " (use a smaller --seq-len or more data)");
  }
}

TokenBatch CausalBatcher::batch(int64_t step, int64_t micro_step) const {
  std::uniform_int_distribution<int64_t> start(0, stream_.size() - seq_len_ - 1);
  auto window = torch::empty({batch_size_, seq_len_ + 1}, torch::kLong);  // (B, T+1)
  auto* data = window.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch_size_; ++b) {
    std::mt19937_64 rng(row_seed(seed_, step, global_row(shard_, micro_step, batch_size_, b)));
    stream_.read(start(rng), seq_len_ + 1, data + b * (seq_len_ + 1));
  }
  return {window.slice(1, 0, seq_len_).contiguous(), window.slice(1, 1, seq_len_ + 1).contiguous()};
}

}  // namespace lmzoo
