// LayerNorm and RMSNorm for CPU fp32 rows of a multiple of 8 features with AVX2/FMA: one pass forward
// (keeping mean and / or 1/rms per row), one pass backward. ATen's formulas for LayerNorm.
// Leaves out: other dtypes and devices.
#pragma once
#include <torch/torch.h>

namespace lmzoo {

// layer_norm over the last dim (size weight.size(0)) with gain `weight` and optional `bias`; differentiable
// in all three. Falls back to torch::layer_norm where the kernel does not apply.
torch::Tensor fused_layer_norm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                               double eps);

// x * rsqrt(mean(x^2) + eps) * weight over the last dim; differentiable in x and weight. Falls back to
// the same formula in plain ops (fp32) where the kernel does not apply.
torch::Tensor fused_rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

}  // namespace lmzoo
