// Multi-head self-attention: softmax(q k^T / sqrt(hs) + mask) v, with an optional KV cache.
// Shapes: B batch, T new positions, S attended positions, C d_model, nh heads, hs head size.
#include "models/layers/attention.h"

#include <cmath>
#include <limits>

#include "models/layers/attention_kernel.h"
#include "models/layers/linear_kernel.h"

namespace lmzoo {

SelfAttentionImpl::SelfAttentionImpl(const ModelConfig& config)
    : n_head_(config.n_head), head_dim_(config.head_dim()) {
  c_attn = register_module(
      "c_attn", torch::nn::Linear(torch::nn::LinearOptions(config.d_model, 3 * config.d_model).bias(config.bias)));
  c_proj = register_module(
      "c_proj", torch::nn::Linear(torch::nn::LinearOptions(config.d_model, config.d_model).bias(config.bias)));
  attn_dropout = register_module("attn_dropout", torch::nn::Dropout(config.dropout));
}

torch::Tensor SelfAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& blocked, LayerKVCache* cache) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
  auto qkv_all = fast_linear(x, c_attn->weight, c_attn->bias);  // (B, T, 3C)
  // Plain causal self-attention without cache or active dropout: the fused kernel (same math, one pass).
  const bool dropout_active = is_training() && attn_dropout->options.p() > 0;
  if (!cache && !dropout_active && fused_causal_attention_supported(qkv_all, n_head_) && is_causal_mask(blocked, T)) {
    auto y = fused_causal_attention(qkv_all, n_head_, 1.0 / std::sqrt(double(head_dim_)));  // (B, T, C)
    return fast_linear(y, c_proj->weight, c_proj->bias);
  }
  // chunk (not select) so that backward concatenates the three gradients in one op.
  auto qkv = qkv_all.chunk(3, -1);                              // 3 x (B, T, C)
  auto q = qkv[0].view({B, T, n_head_, head_dim_}).transpose(1, 2);  // (B, nh, T, hs)
  auto k = qkv[1].view({B, T, n_head_, head_dim_}).transpose(1, 2);  // (B, nh, T, hs)
  auto v = qkv[2].view({B, T, n_head_, head_dim_}).transpose(1, 2);  // (B, nh, T, hs)
  if (cache) {
    if (cache->k.defined()) {
      k = torch::cat({cache->k, k}, 2);  // (B, nh, S, hs)
      v = torch::cat({cache->v, v}, 2);  // (B, nh, S, hs)
    }
    cache->k = k;
    cache->v = v;
  }
  auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(head_dim_)));  // (B, nh, T, S)
  if (blocked.defined()) att = att.masked_fill(blocked, -std::numeric_limits<float>::infinity());
  att = attn_dropout(torch::softmax(att, -1));
  auto y = torch::matmul(att, v);                     // (B, nh, T, hs)
  y = y.transpose(1, 2).reshape({B, T, C});           // (B, T, C)
  return fast_linear(y, c_proj->weight, c_proj->bias);
}

}  // namespace lmzoo
