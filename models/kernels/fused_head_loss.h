// The output layer and its mean cross-entropy together, in row chunks: no (tokens x vocabulary) logits tensor
// exists at once, and the gradients are made in the forward pass (the loss ends the graph), so the backward only
// scales them. Any device; under autocast the products run in its dtype and the softmax in fp32.
#pragma once
#include <cstdint>

#include <torch/torch.h>

namespace lmzoo {

// Rows of logits computed at once for a vocabulary of VOCAB, at least 64: about 128 MiB of fp32 logits on a GPU
// (products large enough to fill it), 32 MiB on a CPU.
int64_t fused_head_loss_chunk_rows(int64_t vocab, bool on_gpu);

// hidden (N, C), weight (V, C), bias (V) or undefined, targets (N) int64 with IGNORE_INDEX where not scored ->
// mean over the scored rows of logsumexp(l_r) - l_r[target_r], l = hidden weight^T + bias; 0 when no row is
// scored. Differentiable in hidden, weight and bias. CHUNK_ROWS: rows per chunk (0: fused_head_loss_chunk_rows for
// hidden's device).
torch::Tensor fused_head_loss(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& bias,
                              const torch::Tensor& targets, int64_t ignore_index, int64_t chunk_rows = 0);

}  // namespace lmzoo
