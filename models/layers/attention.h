// Multi-head self-attention with a fused QKV projection, a boolean "blocked" mask and a KV cache.
// Leaves out: cross-attention and grouped-query heads.
#pragma once
#include <torch/torch.h>

#include "models/config.h"

namespace lmzoo {

// Keys and values of the positions seen so far, per layer: (B, nh, S_past, hs) each.
struct LayerKVCache {
  torch::Tensor k, v;
  int64_t length() const { return k.defined() ? k.size(2) : 0; }
};

class SelfAttentionImpl : public torch::nn::Module {
 public:
  explicit SelfAttentionImpl(const ModelConfig& config);
  // x: (B, T, C). blocked: bool, broadcastable to (B, nh, T, S), true where attention is not
  // allowed (undefined: attend everywhere). cache: when given, its keys/values are prepended
  // and the new ones appended, so S = cache length before the call + T.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& blocked, LayerKVCache* cache = nullptr);

  torch::nn::Linear c_attn{nullptr}, c_proj{nullptr};
  torch::nn::Dropout attn_dropout{nullptr};

 private:
  int64_t n_head_, head_dim_;
};
TORCH_MODULE(SelfAttention);

}  // namespace lmzoo
