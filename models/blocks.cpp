// Transformer blocks: x + drop(sublayer(ln(x))) per sublayer (pre-norm), ln(x + drop(sublayer(x))) (post-norm),
// or x + drop(attn(ln_1 x)) + drop(mlp(ln_2 x)) (parallel residual, pre-norm).
#include "models/blocks.h"

#include "models/kernels/add_norm.h"

namespace lmzoo {

namespace {

// x + out, where out is a sublayer's freshly computed output: added in place when the dtypes and shapes
// match, which saves allocating and filling a new tensor (the sum is the same: float addition commutes).
torch::Tensor add_residual(const torch::Tensor& x, torch::Tensor out) {
  if (out.scalar_type() == x.scalar_type() && out.sizes() == x.sizes()) return out.add_(x);
  return x + out;
}

// {x + out, norm(x + out)}: one CUDA kernel under --fused-add-norm where it applies, else the add and the norm.
SumAndNorm add_then_norm(Norm& norm, const torch::Tensor& x, torch::Tensor out) {
  if (fused_add_norm_applies(x, out, norm->weight, norm->bias)) {
    return fused_add_norm(x, out, norm->weight, norm->bias, norm->eps(), norm->rms());
  }
  auto sum = add_residual(x, std::move(out));
  return {sum, norm->forward(sum)};
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
    const auto h = add_then_norm(ln_2, x, resid_dropout(attn(ln_1(x), mask, cache, position_bias)));
    return add_residual(h.sum, resid_dropout(mlp(h.normed)));
  }
  const auto h = add_then_norm(ln_1, x, resid_dropout(attn(x, mask, cache, position_bias))).normed;
  return add_then_norm(ln_2, h, resid_dropout(mlp(h))).normed;
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
    const auto h = add_then_norm(ln_2, x, resid_dropout(attn(ln_1(x), mask, cache, position_bias)));
    const auto h2 = add_then_norm(ln_3, h.sum, resid_dropout(cross_attn(h.normed, memory, memory_blocked, cross_cache)));
    return add_residual(h2.sum, resid_dropout(mlp(h2.normed)));
  }
  auto h = add_then_norm(ln_1, x, resid_dropout(attn(x, mask, cache, position_bias))).normed;
  h = add_then_norm(ln_2, h, resid_dropout(cross_attn(h, memory, memory_blocked, cross_cache))).normed;
  return add_then_norm(ln_3, h, resid_dropout(mlp(h))).normed;
}

}  // namespace lmzoo
