// at::scaled_dot_product_attention (LibTorch >= 2.1: flash / memory-efficient kernels on CUDA, no materialised
// T x T scores) behind lmzoo's mask conventions, and the rule for when attention takes it.
#pragma once
#include <torch/torch.h>

namespace lmzoo {

// Whether attention on q's device should run through sdpa(): LibTorch has it, LMZOO_KERNELS is not off, and q
// is on a GPU. (On CPUs lmzoo's own causal kernel and plain ops were measured faster; see the README.)
bool sdpa_preferred(const torch::Tensor& q);

// softmax(scale * q k^T + position_bias, -inf where blocked, causal if asked) v with dropout_p on the weights:
// q (B, nh, T, hs), k and v (B, nh, S, hs), blocked bool broadcastable to (B, nh, T, S) (true: not allowed),
// position_bias float broadcastable to (B, nh, T, S). causal with T == S and no bias takes the kernels' own
// causal path and ignores blocked. Returns (B, nh, T, hs).
torch::Tensor sdpa(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& blocked,
                   bool causal, const torch::Tensor& position_bias, double dropout_p, double scale);

}  // namespace lmzoo
