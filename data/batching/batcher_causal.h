// Causal-LM batches: random windows of T+1 tokens from a token stream, x = w[:-1], y = w[1:].
// Sampling is a pure function of (seed, step, micro-step, shard), so resuming needs only the step.
#pragma once
#include <cstdint>

#include <torch/torch.h>

#include "data/corpus/data_shard.h"
#include "data/corpus/shards.h"

namespace lmzoo {

struct TokenBatch {
  torch::Tensor inputs;   // (B, T) int64
  torch::Tensor targets;  // (B, T) int64
};

class CausalBatcher {
 public:
  CausalBatcher(const TokenStream& stream, int64_t batch_size, int64_t seq_len, uint64_t seed,
                DataShard shard = {});
  TokenBatch batch(int64_t step, int64_t micro_step) const;

 private:
  const TokenStream& stream_;
  int64_t batch_size_, seq_len_;
  uint64_t seed_;
  DataShard shard_;
};

}  // namespace lmzoo
