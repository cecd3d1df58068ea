// Multi-head attention: softmax(q k^T * scale + bias + mask) v, self (with an optional KV cache) and cross.
// Shapes: B batch, T new positions, S attended positions, C d_model, nh heads, hs head size.
#include "models/layers/attention.h"

#include <cmath>
#include <limits>

#include "models/layers/attention_kernel.h"
#include "models/layers/linear_kernel.h"

namespace lmzoo {

namespace {
torch::nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}
}  // namespace

torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                     const torch::Tensor& blocked, const torch::Tensor& position_bias, double scale,
                     torch::nn::Dropout& dropout) {
  const int64_t B = q.size(0), nh = q.size(1), T = q.size(2), hs = q.size(3);
  auto att = torch::matmul(q, k.transpose(-2, -1));  // (B, nh, T, S)
  if (scale != 1.0) att = att * scale;
  if (position_bias.defined()) att = att + position_bias;
  if (blocked.defined()) att = att.masked_fill(blocked, -std::numeric_limits<float>::infinity());
  att = dropout(torch::softmax(att, -1));
  auto y = torch::matmul(att, v);                 // (B, nh, T, hs)
  return y.transpose(1, 2).reshape({B, T, nh * hs});  // (B, T, nh*hs)
}

SelfAttentionImpl::SelfAttentionImpl(const ModelConfig& config)
    : n_head_(config.n_head), head_dim_(config.head_size()), scale_(config.attention_scale()) {
  c_attn = register_module("c_attn", linear(config.d_model, 3 * config.attn_dim(), config.bias));
  c_proj = register_module("c_proj", linear(config.attn_dim(), config.d_model, config.bias));
  attn_dropout = register_module("attn_dropout", torch::nn::Dropout(config.dropout));
}

torch::Tensor SelfAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& blocked, LayerKVCache* cache,
                                         const torch::Tensor& position_bias) {
  const int64_t B = x.size(0), T = x.size(1);
  auto qkv_all = fast_linear(x, c_attn->weight, c_attn->bias);  // (B, T, 3*nh*hs)
  // Plain causal self-attention (no cache, position bias or active dropout; 1/sqrt(hs) scale; heads
  // spanning d_model): the fused kernel, same math in one pass.
  const bool dropout_active = is_training() && attn_dropout->options.p() > 0;
  const bool plain = !cache && !position_bias.defined() && !dropout_active && n_head_ * head_dim_ == x.size(2) &&
                     scale_ == 1.0 / std::sqrt(double(head_dim_));
  if (plain && fused_causal_attention_supported(qkv_all, n_head_) && is_causal_mask(blocked, T)) {
    auto y = fused_causal_attention(qkv_all, n_head_, scale_);  // (B, T, C)
    return fast_linear(y, c_proj->weight, c_proj->bias);
  }
  // chunk (not select) so that backward concatenates the three gradients in one op.
  auto qkv = qkv_all.chunk(3, -1);                              // 3 x (B, T, nh*hs)
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
  return fast_linear(attend(q, k, v, blocked, position_bias, scale_, attn_dropout), c_proj->weight,
                     c_proj->bias);  // (B, T, C)
}

CrossAttentionImpl::CrossAttentionImpl(const ModelConfig& config)
    : n_head_(config.n_head), head_dim_(config.head_size()), scale_(config.attention_scale()) {
  c_q = register_module("c_q", linear(config.d_model, config.attn_dim(), config.bias));
  c_kv = register_module("c_kv", linear(config.d_model, 2 * config.attn_dim(), config.bias));
  c_proj = register_module("c_proj", linear(config.attn_dim(), config.d_model, config.bias));
  attn_dropout = register_module("attn_dropout", torch::nn::Dropout(config.dropout));
}

LayerKVCache CrossAttentionImpl::project_memory(const torch::Tensor& memory) {
  const int64_t B = memory.size(0), S = memory.size(1);
  auto kv = c_kv(memory).chunk(2, -1);  // 2 x (B, S, nh*hs)
  return {kv[0].view({B, S, n_head_, head_dim_}).transpose(1, 2),   // (B, nh, S, hs)
          kv[1].view({B, S, n_head_, head_dim_}).transpose(1, 2)};  // (B, nh, S, hs)
}

torch::Tensor CrossAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& memory,
                                          const torch::Tensor& blocked, LayerKVCache* cache) {
  const int64_t B = x.size(0), T = x.size(1);
  LayerKVCache kv;
  if (cache && cache->k.defined()) {
    kv = *cache;
  } else {
    TORCH_CHECK(memory.defined(), "cross-attention needs the encoder output (or a filled cache)");
    kv = project_memory(memory);
    if (cache) *cache = kv;
  }
  auto q = c_q(x).view({B, T, n_head_, head_dim_}).transpose(1, 2);  // (B, nh, T, hs)
  return c_proj(attend(q, kv.k, kv.v, blocked, torch::Tensor(), scale_, attn_dropout));  // (B, T, C)
}

}  // namespace lmzoo
