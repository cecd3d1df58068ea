// Exact (erf) GELU for CPU fp32 with AVX2/FMA that computes its derivative in the forward pass, so backward is
// one multiply. Same formulas as ATen's vectorised GELU. Leaves out: the tanh form, other dtypes and devices.
#pragma once
#include <torch/torch.h>

namespace lmzoo {

// gelu(x) = x * 0.5 * (1 + erf(x / sqrt(2))), differentiable; falls back to torch::gelu where unsupported.
torch::Tensor fused_gelu(const torch::Tensor& x);

}  // namespace lmzoo
