// Transformer blocks: x + drop(sublayer(ln(x))) per sublayer (pre-norm), ln(x + drop(sublayer(x))) (post-norm),
// or x + drop(attn(ln_1 x)) + drop(mlp(ln_2 x)) (parallel residual, pre-norm).
#include "models/blocks.h"

namespace lmzoo {

namespace {

// x + out, where out is a sublayer's freshly computed output: added in place when the dtypes and shapes
// match, which saves allocating and filling a new tensor (the sum is the same: float addition commutes).
torch::Tensor add_residual(const torch::Tensor& x, torch::Tensor out) {
  if (out.scalar_type() == x.scalar_type() && out.sizes() == x.sizes()) return out.add_(x);
  return x + out;
}

}  // namespace

TransformerBlockImpl::TransformerBlockImpl(const ModelConfig& config, const PositionTables& tables)
    : pre_norm_(config.norm_position == NormPosition::kPre), parallel_(config.parallel_residual) {
  ln_1 = register_module("ln_1", make_norm(config));
  attn = register_module("attn", SelfAttention(config, tables));
  ln_2 = register_module("ln_2", make_norm(config));
  mlp = register_module("mlp", FeedForward(config));
  resid_dropout = register_module("resid_dropout", torch::nn::Dropout(config.dropout));
}

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x, const AttentionMask& mask, LayerKVCache* cache,
                                            const torch::Tensor& position_bias) {
  if (parallel_) {  // GPT-NeoX's use_parallel_residual: both sublayers read the block input
    auto a = resid_dropout(attn(ln_1(x), mask, cache, position_bias));
    return add_residual(x, add_residual(a, resid_dropout(mlp(ln_2(x)))));
  }
  if (pre_norm_) {
    auto h = add_residual(x, resid_dropout(attn(ln_1(x), mask, cache, position_bias)));
    return add_residual(h, resid_dropout(mlp(ln_2(h))));
  }
  auto h = ln_1(add_residual(x, resid_dropout(attn(x, mask, cache, position_bias))));
  return ln_2(add_residual(h, resid_dropout(mlp(h))));
}

DecoderBlockImpl::DecoderBlockImpl(const ModelConfig& config, const PositionTables& tables)
    : pre_norm_(config.norm_position == NormPosition::kPre) {
  ln_1 = register_module("ln_1", make_norm(config));
  attn = register_module("attn", SelfAttention(config, tables));
  ln_2 = register_module("ln_2", make_norm(config));
  cross_attn = register_module("cross_attn", CrossAttention(config));
  ln_3 = register_module("ln_3", make_norm(config));
  mlp = register_module("mlp", FeedForward(config));
  resid_dropout = register_module("resid_dropout", torch::nn::Dropout(config.dropout));
}

torch::Tensor DecoderBlockImpl::forward(const torch::Tensor& x, const AttentionMask& mask,
                                        const torch::Tensor& position_bias, const torch::Tensor& memory_in,
                                        const torch::Tensor& memory_blocked, LayerKVCache* cache,
                                        LayerKVCache* cross_cache) {
  // One autograd node per block gathers this block's gradients of the encoder output (c_kv and its adapters use it
  // several times), so the backward sums them in the same order whether or not the block is checkpointed.
  const torch::Tensor memory = memory_in.defined() ? memory_in.view_as(memory_in) : memory_in;
  if (pre_norm_) {
    auto h = add_residual(x, resid_dropout(attn(ln_1(x), mask, cache, position_bias)));
    h = add_residual(h, resid_dropout(cross_attn(ln_2(h), memory, memory_blocked, cross_cache)));
    return add_residual(h, resid_dropout(mlp(ln_3(h))));
  }
  auto h = ln_1(add_residual(x, resid_dropout(attn(x, mask, cache, position_bias))));
  h = ln_2(add_residual(h, resid_dropout(cross_attn(h, memory, memory_blocked, cross_cache))));
  return ln_3(add_residual(h, resid_dropout(mlp(h))));
}

}  // namespace lmzoo
