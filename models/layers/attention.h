// Multi-head attention: self-attention with a fused QKV projection, a KV cache and rotary positions, and
// cross-attention over an encoder output (keys/values computed once, cacheable); boolean "blocked" masks,
// optional additive position bias (T5, ALiBi); grouped-query heads (n_kv_heads key/value heads, each shared
// by n_head / n_kv_heads query heads). Inner width n_head * head_size may differ from d_model.
#pragma once
#include <torch/torch.h>

#include "models/config.h"
#include "models/layers/positions.h"
#include "models/lora.h"

namespace lmzoo {

// Which keys each query may attend to. blocked: bool, broadcastable to (B, nh, T, S), true where attention is
// not allowed (undefined: everywhere allowed). causal: blocked is exactly the causal triangle over T == S new
// positions (no cache, no prefix), so a kernel may apply causality itself (flash attention's is_causal) and
// never read blocked.
struct AttentionMask {
  torch::Tensor blocked;
  bool causal = false;
  torch::Tensor positions;  // (B, T) int64, each token's position (packed rows); undefined: P .. P + T - 1
};

// Keys and values of the positions seen so far, per layer: (B, n_kv, S_past, hs) each (rotated for rope).
struct LayerKVCache {
  torch::Tensor k, v;
  int64_t length() const { return k.defined() ? k.size(2) : 0; }
};

class SelfAttentionImpl : public torch::nn::Module, public LoraAdaptable {
 public:
  // tables: the model's fixed position tables (rope reads its cos/sin; null when the config has none).
  SelfAttentionImpl(const ModelConfig& config, const PositionTables& tables);
  // x: (B, T, C). mask: what each query may not see. cache: when given, its keys/values are prepended
  // and the new ones appended, so S = cache length before the call + T.
  // position_bias: float, broadcastable to (B, nh, T, S), added to the scores (undefined: none).
  torch::Tensor forward(const torch::Tensor& x, const AttentionMask& mask, LayerKVCache* cache = nullptr,
                        const torch::Tensor& position_bias = torch::Tensor());

  // LoRA (models/lora.h): q, k, v and o.
  std::vector<LoraTarget> lora_parts() const override;
  std::vector<LoraTarget> attach_lora(const LoraSettings& settings) override;
  void merge_lora() override;
  std::vector<LoraSite> lora_sites() const override;

  // c_attn: ((nh + 2 n_kv) * hs, C) as [q; k; v]; c_proj: (C, nh * hs).
  torch::nn::Linear c_attn{nullptr}, c_proj{nullptr};
  torch::nn::Dropout attn_dropout{nullptr};
  LoraAdapter lora_q{nullptr}, lora_k{nullptr}, lora_v{nullptr}, lora_o{nullptr};  // empty unless attached

 private:
  int64_t n_head_, n_kv_head_, head_dim_;
  double scale_;
  RotaryTables rotary_;  // rope only: the model's PositionTables buffers (undefined tensors otherwise)
};
TORCH_MODULE(SelfAttention);

// Queries from the decoder, keys and values from an encoder output ("memory"), no position bias (T5).
class CrossAttentionImpl : public torch::nn::Module, public LoraAdaptable {
 public:
  explicit CrossAttentionImpl(const ModelConfig& config);
  // Keys and values of memory (B, S, C): (B, nh, S, hs) each.
  LayerKVCache project_memory(const torch::Tensor& memory);
  // x: (B, T, C); memory: (B, S, C); blocked: bool, broadcastable to (B, nh, T, S), true at keys not
  // to attend (encoder pads). cache: when it holds keys/values they are used and memory may be
  // undefined; when empty it is filled from memory, so later steps skip the projection.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& blocked,
                        LayerKVCache* cache = nullptr);

  // LoRA (models/lora.h): q, k, v and o.
  std::vector<LoraTarget> lora_parts() const override;
  std::vector<LoraTarget> attach_lora(const LoraSettings& settings) override;
  void merge_lora() override;
  std::vector<LoraSite> lora_sites() const override;

  // c_q: (nh * hs, C); c_kv: (2 * n_kv * hs, C) as [k; v]; c_proj: (C, nh * hs).
  torch::nn::Linear c_q{nullptr}, c_kv{nullptr}, c_proj{nullptr};
  torch::nn::Dropout attn_dropout{nullptr};
  LoraAdapter lora_q{nullptr}, lora_k{nullptr}, lora_v{nullptr}, lora_o{nullptr};  // empty unless attached

 private:
  int64_t n_head_, n_kv_head_, head_dim_;
  double scale_;
};
TORCH_MODULE(CrossAttention);

// softmax(scale * q k^T + position_bias, -inf where blocked) v with dropout on the weights, heads
// merged: q (B, nh, T, hs), k and v (B, n_kv, S, hs) with n_kv dividing nh (query head h reads key/value
// head h / (nh / n_kv)) -> (B, T, nh * hs). Runs at::scaled_dot_product_attention where it is faster
// (models/kernels/sdpa.h), plain ops otherwise.
torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const AttentionMask& mask,
                     const torch::Tensor& position_bias, double scale, torch::nn::Dropout& dropout);

}  // namespace lmzoo
