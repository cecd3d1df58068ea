// Transformer block: x + drop(attn(ln_1(x))), x + drop(mlp(ln_2(x))) (pre-norm) or the post-norm form.
#include "models/blocks.h"

namespace lmzoo {

TransformerBlockImpl::TransformerBlockImpl(const ModelConfig& config) : pre_norm_(config.norm_position == "pre") {
  ln_1 = register_module("ln_1", make_norm(config));
  attn = register_module("attn", SelfAttention(config));
  ln_2 = register_module("ln_2", make_norm(config));
  mlp = register_module("mlp", FeedForward(config));
  resid_dropout = register_module("resid_dropout", torch::nn::Dropout(config.dropout));
}

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& blocked, LayerKVCache* cache) {
  if (pre_norm_) {
    auto h = x + resid_dropout(attn(ln_1(x), blocked, cache));
    return h + resid_dropout(mlp(ln_2(h)));
  }
  auto h = ln_1(x + resid_dropout(attn(x, blocked, cache)));
  return ln_2(h + resid_dropout(mlp(h)));
}

}  // namespace lmzoo
