// Multi-head attention: softmax(q k^T * scale + bias + mask) v, self (with an optional KV cache) and cross.
// Shapes: B batch, T new positions, S attended positions, C d_model, nh heads, hs head size.
#include "models/layers/attention.h"

#include <cmath>
#include <limits>

#include "models/kernels/attention_kernel.h"
#include "models/kernels/low_precision_linear.h"
#include "models/kernels/sdpa.h"

namespace lmzoo {

namespace {
torch::nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

// (B, n_kv, S, hs) -> (B, nh, S, hs), each key/value head repeated for its group of query heads.
torch::Tensor repeat_kv_heads(const torch::Tensor& kv, int64_t n_head) {
  const int64_t B = kv.size(0), n_kv = kv.size(1), S = kv.size(2), hs = kv.size(3);
  if (n_kv == n_head) return kv;
  TORCH_CHECK(n_head % n_kv == 0, n_kv, " key/value heads do not divide ", n_head, " query heads");
  return kv.unsqueeze(2).expand({B, n_kv, n_head / n_kv, S, hs}).reshape({B, n_head, S, hs});
}
// Registers an adapter NAME on OWNER for part T of LINEAR (ROWS output rows) when SETTINGS targets T.
void attach_part(torch::nn::Module& owner, const LoraSettings& settings, LoraTarget t, LoraAdapter& slot,
                 const char* name, const torch::nn::Linear& linear, int64_t rows, std::vector<LoraTarget>& attached) {
  if (!settings.targets_part(t)) return;
  slot = make_lora_adapter(owner, name, linear, rows, settings);
  attached.push_back(t);
}

}  // namespace

torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k_in, const torch::Tensor& v_in,
                     const AttentionMask& mask, const torch::Tensor& position_bias, double scale,
                     torch::nn::Dropout& dropout) {
  const int64_t B = q.size(0), nh = q.size(1), T = q.size(2), hs = q.size(3);
  auto k = repeat_kv_heads(k_in, nh), v = repeat_kv_heads(v_in, nh);  // (B, nh, S, hs)
  const double dropout_p = dropout->is_training() ? dropout->options.p() : 0.0;
  torch::Tensor y;  // (B, nh, T, hs)
  if (sdpa_preferred(q)) {
    y = sdpa(q, k, v, mask.blocked, mask.causal, position_bias, dropout_p, scale);
  } else {
    auto att = torch::matmul(q, k.transpose(-2, -1));  // (B, nh, T, S)
    if (scale != 1.0) att = att * scale;
    if (position_bias.defined()) att = att + position_bias;
    if (mask.blocked.defined()) att = att.masked_fill(mask.blocked, -std::numeric_limits<float>::infinity());
    att = dropout(torch::softmax(att, -1));
    y = torch::matmul(att, v);  // (B, nh, T, hs)
  }
  return y.transpose(1, 2).reshape({B, T, nh * hs});  // (B, T, nh*hs)
}

SelfAttentionImpl::SelfAttentionImpl(const ModelConfig& config, const PositionTables& tables)
    : n_head_(config.n_head),
      n_kv_head_(config.kv_heads()),
      head_dim_(config.head_size()),
      scale_(config.attention_scale()) {
  c_attn = register_module("c_attn", linear(config.d_model, config.attn_dim() + 2 * config.kv_dim(),
                                            config.bias || config.qkv_bias));
  c_proj = register_module("c_proj", linear(config.attn_dim(), config.d_model, config.bias));
  attn_dropout = register_module("attn_dropout", torch::nn::Dropout(config.dropout));
  if (config.position == Position::kRope) rotary_ = tables->rotary;  // shared buffers: they move with the model
}

torch::Tensor SelfAttentionImpl::forward(const torch::Tensor& x, const AttentionMask& mask, LayerKVCache* cache,
                                         const torch::Tensor& position_bias) {
  const int64_t B = x.size(0), T = x.size(1), P = cache ? cache->length() : 0;
  const int64_t q_width = n_head_ * head_dim_, kv_width = n_kv_head_ * head_dim_;
  auto qkv_all = with_lora(apply_linear(x, c_attn), x,
                           {{lora_q, q_width}, {lora_k, kv_width}, {lora_v, kv_width}});  // (B, T, (nh + 2 n_kv) * hs)
  // split_with_sizes (not select) so that backward concatenates the three gradients in one op.
  auto qkv = qkv_all.split_with_sizes({q_width, kv_width, kv_width}, -1);
  auto q = qkv[0].view({B, T, n_head_, head_dim_});     // (B, T, nh, hs)
  auto k = qkv[1].view({B, T, n_kv_head_, head_dim_});  // (B, T, n_kv, hs)
  auto v = qkv[2].view({B, T, n_kv_head_, head_dim_});  // (B, T, n_kv, hs)
  if (rotary_.cos.defined()) {
    q = apply_rotary(q, rotary_, P, mask.positions);
    k = apply_rotary(k, rotary_, P, mask.positions);
  }
  // Plain causal self-attention (no cache, position bias or active dropout; 1/sqrt(hs) scale; query heads
  // spanning d_model): the fused kernel, same math in one pass, on [q; k; v] with kv heads repeated.
  const bool dropout_active = is_training() && attn_dropout->options.p() > 0;
  const bool plain = !cache && !position_bias.defined() && !dropout_active && q_width == x.size(2) &&
                     scale_ == 1.0 / std::sqrt(double(head_dim_));
  if (plain && mask.causal && x.device().is_cpu()) {
    torch::Tensor fused_input = qkv_all;  // (B, T, 3C)
    if (rotary_.cos.defined() || n_kv_head_ != n_head_) {
      const int64_t group = n_head_ / n_kv_head_;
      auto per_query_head = [&](const torch::Tensor& kv) {  // (B, T, n_kv, hs) -> (B, T, C)
        return kv.unsqueeze(3).expand({B, T, n_kv_head_, group, head_dim_}).reshape({B, T, q_width});
      };
      fused_input = torch::cat({q.reshape({B, T, q_width}), per_query_head(k), per_query_head(v)}, -1);
    }
    if (fused_causal_attention_supported(fused_input, n_head_)) {
      auto y = fused_causal_attention(fused_input, n_head_, scale_);  // (B, T, C)
      return with_lora(apply_linear(y, c_proj), y, {{lora_o, c_proj->weight.size(0)}});
    }
  }
  q = q.transpose(1, 2);  // (B, nh, T, hs)
  k = k.transpose(1, 2);  // (B, n_kv, T, hs)
  v = v.transpose(1, 2);  // (B, n_kv, T, hs)
  if (cache) {
    if (cache->k.defined()) {
      k = torch::cat({cache->k, k}, 2);  // (B, n_kv, S, hs)
      v = torch::cat({cache->v, v}, 2);  // (B, n_kv, S, hs)
    }
    cache->k = k;
    cache->v = v;
  }
  auto y = attend(q, k, v, mask, position_bias, scale_, attn_dropout);  // (B, T, nh*hs)
  return with_lora(apply_linear(y, c_proj), y, {{lora_o, c_proj->weight.size(0)}});  // (B, T, C)
}

std::vector<LoraTarget> SelfAttentionImpl::lora_parts() const {
  return {LoraTarget::kQuery, LoraTarget::kKey, LoraTarget::kValue, LoraTarget::kOutput};
}

std::vector<LoraTarget> SelfAttentionImpl::attach_lora(const LoraSettings& settings) {
  const int64_t q_width = n_head_ * head_dim_, kv_width = n_kv_head_ * head_dim_;
  std::vector<LoraTarget> attached;
  auto attach = [&](LoraTarget t, LoraAdapter& slot, const char* name, const torch::nn::Linear& linear, int64_t rows) {
    attach_part(*this, settings, t, slot, name, linear, rows, attached);
  };
  attach(LoraTarget::kQuery, lora_q, "lora_q", c_attn, q_width);
  attach(LoraTarget::kKey, lora_k, "lora_k", c_attn, kv_width);
  attach(LoraTarget::kValue, lora_v, "lora_v", c_attn, kv_width);
  attach(LoraTarget::kOutput, lora_o, "lora_o", c_proj, c_proj->weight.size(0));
  return attached;
}

void SelfAttentionImpl::merge_lora() {
  const int64_t q_width = n_head_ * head_dim_, kv_width = n_kv_head_ * head_dim_;
  merge_lora_part(*this, "lora_q", c_attn, 0, lora_q);
  merge_lora_part(*this, "lora_k", c_attn, q_width, lora_k);
  merge_lora_part(*this, "lora_v", c_attn, q_width + kv_width, lora_v);
  merge_lora_part(*this, "lora_o", c_proj, 0, lora_o);
}

CrossAttentionImpl::CrossAttentionImpl(const ModelConfig& config)
    : n_head_(config.n_head),
      n_kv_head_(config.kv_heads()),
      head_dim_(config.head_size()),
      scale_(config.attention_scale()) {
  c_q = register_module("c_q", linear(config.d_model, config.attn_dim(), config.bias));
  c_kv = register_module("c_kv", linear(config.d_model, 2 * config.kv_dim(), config.bias));
  c_proj = register_module("c_proj", linear(config.attn_dim(), config.d_model, config.bias));
  attn_dropout = register_module("attn_dropout", torch::nn::Dropout(config.dropout));
}

LayerKVCache CrossAttentionImpl::project_memory(const torch::Tensor& memory) {
  const int64_t B = memory.size(0), S = memory.size(1), kv_width = n_kv_head_ * head_dim_;
  auto kv = with_lora(apply_linear(memory, c_kv), memory, {{lora_k, kv_width}, {lora_v, kv_width}})
                .chunk(2, -1);  // 2 x (B, S, n_kv*hs)
  return {kv[0].view({B, S, n_kv_head_, head_dim_}).transpose(1, 2),   // (B, n_kv, S, hs)
          kv[1].view({B, S, n_kv_head_, head_dim_}).transpose(1, 2)};  // (B, n_kv, S, hs)
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
  auto q = with_lora(apply_linear(x, c_q), x, {{lora_q, n_head_ * head_dim_}})
               .view({B, T, n_head_, head_dim_})
               .transpose(1, 2);  // (B, nh, T, hs)
  auto y = attend(q, kv.k, kv.v, {blocked, false}, torch::Tensor(), scale_, attn_dropout);  // (B, T, nh*hs)
  return with_lora(apply_linear(y, c_proj), y, {{lora_o, c_proj->weight.size(0)}});  // (B, T, C)
}

std::vector<LoraSite> SelfAttentionImpl::lora_sites() const {
  const int64_t q_width = n_head_ * head_dim_, kv_width = n_kv_head_ * head_dim_;
  return {{"c_attn", {{lora_q, q_width}, {lora_k, kv_width}, {lora_v, kv_width}}},
          {"c_proj", {{lora_o, c_proj->weight.size(0)}}}};
}

std::vector<LoraSite> CrossAttentionImpl::lora_sites() const {
  const int64_t q_width = n_head_ * head_dim_, kv_width = n_kv_head_ * head_dim_;
  return {{"c_q", {{lora_q, q_width}}},
          {"c_kv", {{lora_k, kv_width}, {lora_v, kv_width}}},
          {"c_proj", {{lora_o, c_proj->weight.size(0)}}}};
}

std::vector<LoraTarget> CrossAttentionImpl::lora_parts() const {
  return {LoraTarget::kQuery, LoraTarget::kKey, LoraTarget::kValue, LoraTarget::kOutput};
}

std::vector<LoraTarget> CrossAttentionImpl::attach_lora(const LoraSettings& settings) {
  const int64_t q_width = n_head_ * head_dim_, kv_width = n_kv_head_ * head_dim_;
  std::vector<LoraTarget> attached;
  auto attach = [&](LoraTarget t, LoraAdapter& slot, const char* name, const torch::nn::Linear& linear, int64_t rows) {
    attach_part(*this, settings, t, slot, name, linear, rows, attached);
  };
  attach(LoraTarget::kQuery, lora_q, "lora_q", c_q, q_width);
  attach(LoraTarget::kKey, lora_k, "lora_k", c_kv, kv_width);
  attach(LoraTarget::kValue, lora_v, "lora_v", c_kv, kv_width);
  attach(LoraTarget::kOutput, lora_o, "lora_o", c_proj, c_proj->weight.size(0));
  return attached;
}

void CrossAttentionImpl::merge_lora() {
  merge_lora_part(*this, "lora_q", c_q, 0, lora_q);
  merge_lora_part(*this, "lora_k", c_kv, 0, lora_k);
  merge_lora_part(*this, "lora_v", c_kv, n_kv_head_ * head_dim_, lora_v);
  merge_lora_part(*this, "lora_o", c_proj, 0, lora_o);
}

}  // namespace lmzoo
