// Transformer block: self-attention and feed-forward sublayers with pre- or post-norm residuals.
#pragma once
#include <torch/torch.h>

#include "models/config.h"
#include "models/layers/attention.h"
#include "models/layers/feed_forward.h"
#include "models/layers/norm.h"

namespace lmzoo {

class TransformerBlockImpl : public torch::nn::Module {
 public:
  explicit TransformerBlockImpl(const ModelConfig& config);
  // x: (B, T, C); blocked and cache as in SelfAttention.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& blocked, LayerKVCache* cache = nullptr);

  Norm ln_1{nullptr}, ln_2{nullptr};
  SelfAttention attn{nullptr};
  FeedForward mlp{nullptr};
  torch::nn::Dropout resid_dropout{nullptr};

 private:
  bool pre_norm_;
};
TORCH_MODULE(TransformerBlock);

}  // namespace lmzoo
