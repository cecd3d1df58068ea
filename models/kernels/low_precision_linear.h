// A frozen projection stored in low precision (a LoRA run's --base-precision bf16): y = x W^T + b computed in x's
// dtype, keeping only the low-precision W for the backward (dx = dy W), never an fp32 copy of it.
#pragma once
#include <torch/torch.h>

namespace lmzoo {

// x: (..., K) in the compute dtype; weight: (N, K) in another dtype, not requiring grad; bias: (N) or undefined,
// not requiring grad -> (..., N) in x's dtype. Differentiable in x.
torch::Tensor low_precision_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

}  // namespace lmzoo
