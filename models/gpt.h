// GPT-style decoder-only language model: token embeddings (+ learned or sinusoidal positions; rope, alibi
// and relative positions act inside attention), causal blocks, optional final norm, LM head (tied to the
// token embeddings by default; rows padded to vocab_multiple). Returns logits; no loss here.
#pragma once
#include <vector>

#include <torch/torch.h>

#include "models/activation_checkpointing.h"
#include "models/blocks.h"
#include "models/config.h"
#include "models/layers/positions.h"

namespace lmzoo {

// One LayerKVCache per block, for incremental decoding.
using KVCache = std::vector<LayerKVCache>;

class GPTImpl : public torch::nn::Module {
 public:
  explicit GPTImpl(const ModelConfig& config);
  // idx: (B, T) token ids -> logits (B, T, V). With a cache, idx holds only the new tokens and
  // positions continue after the cached ones; the cache is extended in place.
  // prefix_len (optional, (B,) int64): positions < prefix_len attend bidirectionally (prefix-LM).
  // segment_ids (optional, (B, T) int64; packed rows, no cache): a token attends only to earlier tokens of its own
  // segment, and positions restart at 0 where a segment starts, so each segment is computed as if alone.
  torch::Tensor forward(const torch::Tensor& idx, KVCache* cache = nullptr,
                        const torch::Tensor& prefix_len = torch::Tensor(),
                        const torch::Tensor& segment_ids = torch::Tensor());
  // Final hidden states (B, T, C) before the LM head.
  torch::Tensor hidden_states(const torch::Tensor& idx, KVCache* cache = nullptr,
                              const torch::Tensor& prefix_len = torch::Tensor(),
                              const torch::Tensor& segment_ids = torch::Tensor());
  // (padded V, C): rows past vocab_size are padding, never scored.
  torch::Tensor lm_head_weight() const { return lm_head ? lm_head->weight : wte->weight; }

  const ModelConfig& config() const { return config_; }
  KVCache new_cache() const { return KVCache(config_.n_layer); }
  // Blocks the policy covers recompute their activations in the backward while training (never with a cache).
  void set_activation_checkpointing(CheckpointPolicy policy) { checkpointing_ = policy; }

  torch::nn::Embedding wte{nullptr}, wpe{nullptr};  // wpe: learned positions only
  PositionTables position_tables{nullptr};          // sinusoidal, rope and alibi positions only
  AttentionBias attn_bias{nullptr};                 // alibi and relative positions only
  torch::nn::Dropout emb_dropout{nullptr};
  torch::nn::ModuleList h{nullptr};
  Norm ln_f{nullptr};                  // null without a final norm
  torch::nn::Linear lm_head{nullptr};  // null when tied

 private:
  void init_weights();
  // Block i on x: through checkpointed() when the policy covers it, training, without a cache.
  torch::Tensor run_block(size_t i, const torch::Tensor& x, const AttentionMask& mask, LayerKVCache* cache,
                          const torch::Tensor& position_bias);
  ModelConfig config_;
  CheckpointPolicy checkpointing_;
  // (T, P+T) bool for queries at positions P .. P+T-1 over keys 0 .. P+T-1: true at later keys and, with an
  // attention window W, at keys W or more positions back.
  torch::Tensor blocked_keys(int64_t P, int64_t T, const torch::Device& device) const;
};
TORCH_MODULE(GPT);

}  // namespace lmzoo
