// Fused causal self-attention for fp32 on x86 CPUs with AVX2/FMA, read straight from the QKV projection.
// Leaves out: masks other than causal, KV caches, dropout, other dtypes and devices (callers use plain ops).
#pragma once
#include <torch/torch.h>

namespace lmzoo {

// Whether fused_causal_attention can run: qkv (B, T, 3C) CPU fp32, head size 8, 16, 32 or 64, and a CPU with
// AVX2 and FMA.
bool fused_causal_attention_supported(const torch::Tensor& qkv, int64_t n_head);

// qkv: (B, T, 3C), q | k | v along the last dim, heads of size C / n_head side by side in each.
// Returns y (B, T, C): per head softmax(q k^T * scale, causal) v, heads side by side (the layout
// y.transpose(1, 2).reshape(B, T, C) gives in the plain implementation). Differentiable in qkv.
torch::Tensor fused_causal_attention(const torch::Tensor& qkv, int64_t n_head, double scale);

}  // namespace lmzoo
