// Multi-head attention: self-attention with a fused QKV projection and a KV cache, and cross-attention
// over an encoder output (keys/values computed once, cacheable); boolean "blocked" masks, optional additive
// position bias (T5). Inner width n_head * head_size may differ from d_model. Leaves out: grouped-query heads.
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
  // position_bias: float, broadcastable to (B, nh, T, S), added to the scores (undefined: none).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& blocked, LayerKVCache* cache = nullptr,
                        const torch::Tensor& position_bias = torch::Tensor());

  torch::nn::Linear c_attn{nullptr}, c_proj{nullptr};  // (3 * nh * hs, C) as [q; k; v], (C, nh * hs)
  torch::nn::Dropout attn_dropout{nullptr};

 private:
  int64_t n_head_, head_dim_;
  double scale_;
};
TORCH_MODULE(SelfAttention);

// Queries from the decoder, keys and values from an encoder output ("memory"), no position bias (T5).
class CrossAttentionImpl : public torch::nn::Module {
 public:
  explicit CrossAttentionImpl(const ModelConfig& config);
  // Keys and values of memory (B, S, C): (B, nh, S, hs) each.
  LayerKVCache project_memory(const torch::Tensor& memory);
  // x: (B, T, C); memory: (B, S, C); blocked: bool, broadcastable to (B, nh, T, S), true at keys not
  // to attend (encoder pads). cache: when it holds keys/values they are used and memory may be
  // undefined; when empty it is filled from memory, so later steps skip the projection.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& blocked,
                        LayerKVCache* cache = nullptr);

  torch::nn::Linear c_q{nullptr}, c_kv{nullptr}, c_proj{nullptr};  // (nh*hs, C), (2*nh*hs, C) as [k; v], (C, nh*hs)
  torch::nn::Dropout attn_dropout{nullptr};

 private:
  int64_t n_head_, head_dim_;
  double scale_;
};
TORCH_MODULE(CrossAttention);

// softmax(scale * q k^T + position_bias, -inf where blocked) v with dropout on the weights, heads
// merged: q (B, nh, T, hs), k and v (B, nh, S, hs) -> (B, T, nh * hs).
torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                     const torch::Tensor& blocked, const torch::Tensor& position_bias, double scale,
                     torch::nn::Dropout& dropout);

}  // namespace lmzoo
