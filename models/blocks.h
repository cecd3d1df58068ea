// Transformer blocks with pre- or post-norm residuals: the encoder/decoder-only block (self-attention,
// feed-forward) and the encoder-decoder's decoder block (self-attention, cross-attention, feed-forward).
#pragma once
#include <torch/torch.h>

#include "models/config.h"
#include "models/layers/attention.h"
#include "models/layers/feed_forward.h"
#include "models/layers/norm.h"

namespace lmzoo {

class TransformerBlockImpl : public torch::nn::Module {
 public:
  TransformerBlockImpl(const ModelConfig& config, const PositionTables& tables);
  // x: (B, T, C); mask, cache and position_bias as in SelfAttention.
  torch::Tensor forward(const torch::Tensor& x, const AttentionMask& mask, LayerKVCache* cache = nullptr,
                        const torch::Tensor& position_bias = torch::Tensor());

  Norm ln_1{nullptr}, ln_2{nullptr};
  SelfAttention attn{nullptr};
  FeedForward mlp{nullptr};
  torch::nn::Dropout resid_dropout{nullptr};

 private:
  bool pre_norm_;
  bool parallel_;  // config.parallel_residual (pre-norm only)
};
TORCH_MODULE(TransformerBlock);

// Decoder block of an encoder-decoder model: ln_1 + attn (self), ln_2 + cross_attn, ln_3 + mlp.
class DecoderBlockImpl : public torch::nn::Module {
 public:
  DecoderBlockImpl(const ModelConfig& config, const PositionTables& tables);
  // x: (B, T, C); memory: encoder output (B, S, C). mask, cache and position_bias apply to the self-
  // attention as in SelfAttention; memory_blocked and cross_cache to the cross-attention as in CrossAttention.
  torch::Tensor forward(const torch::Tensor& x, const AttentionMask& mask, const torch::Tensor& position_bias,
                        const torch::Tensor& memory, const torch::Tensor& memory_blocked,
                        LayerKVCache* cache = nullptr, LayerKVCache* cross_cache = nullptr);

  Norm ln_1{nullptr}, ln_2{nullptr}, ln_3{nullptr};
  SelfAttention attn{nullptr};
  CrossAttention cross_attn{nullptr};
  FeedForward mlp{nullptr};
  torch::nn::Dropout resid_dropout{nullptr};

 private:
  bool pre_norm_;
};
TORCH_MODULE(DecoderBlock);

}  // namespace lmzoo
