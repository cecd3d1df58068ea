// Mean cross-entropy fused for CPU fp32 (AVX2/FMA): one pass for log-sum-exp and the loss, one for the
// gradient softmax - onehot. Same math as log_softmax + nll_loss. Leaves out: label smoothing, class weights.
#pragma once
#include <torch/torch.h>

namespace lmzoo {

// logits (N, V), targets (N) int64 -> mean over rows whose target != ignore_index of
// logsumexp(logits_r) - logits_r[target_r]. Differentiable in logits; falls back to
// torch::nn::functional::cross_entropy where unsupported (other devices or dtypes).
torch::Tensor fused_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, int64_t ignore_index);

}  // namespace lmzoo
