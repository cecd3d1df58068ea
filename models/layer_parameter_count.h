// Parameter counts of the shared layers for a config (what models/layers builds), used by the families'
// count formulas (presets.cpp, bert_presets.cpp, t5_presets.cpp); tests check them against built models.
#pragma once
#include <cstdint>

#include "models/config.h"

namespace lmzoo::parameter_count {

inline int64_t norm(const ModelConfig& c) { return c.norm == NormKind::kLayerNorm && c.bias ? 2 * c.d_model : c.d_model; }

// c_attn (q, k, v) + c_proj.
inline int64_t self_attention(const ModelConfig& c) {
  const int64_t d = c.d_model, qkv = c.attn_dim() + 2 * c.kv_dim(), bias = c.bias ? 1 : 0;
  const int64_t qkv_bias = c.bias || c.qkv_bias ? 1 : 0;
  return d * qkv + qkv * qkv_bias + c.attn_dim() * d + d * bias;
}

// c_q + c_kv + c_proj.
inline int64_t cross_attention(const ModelConfig& c) {
  const int64_t d = c.d_model, bias = c.bias ? 1 : 0;
  return d * c.attn_dim() + c.attn_dim() * bias + d * 2 * c.kv_dim() + 2 * c.kv_dim() * bias + c.attn_dim() * d +
         d * bias;
}

// c_fc (+ c_fc_lin when gated) + c_proj.
inline int64_t feed_forward(const ModelConfig& c) {
  const int64_t d = c.d_model, ff = c.ff_dim(), bias = c.bias ? 1 : 0;
  return (c.gated_ffn() ? 2 : 1) * (d * ff + ff * bias) + ff * d + d * bias;
}

// Learned position table or relative bias table (sinusoidal, rope, alibi and none have no parameters).
inline int64_t positions(const ModelConfig& c) {
  if (c.position == Position::kLearned) return (c.max_seq_len + c.position_offset) * c.d_model;  // RoBERTa's offset rows
  if (c.position == Position::kRelative) return c.relative_buckets * c.n_head;
  return 0;
}

}  // namespace lmzoo::parameter_count
