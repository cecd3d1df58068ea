// Linear layer product y = x W^T (+ b) whose forward and input-gradient GEMMs go through oneDNN's sgemm
// on CPU fp32 when the process has it (Debian's LibTorch links libdnnl); otherwise torch::linear.
// Leaves out: other dtypes and devices, which take torch::linear unchanged.
#pragma once
#include <torch/torch.h>

namespace lmzoo {

// x: (..., K), weight: (N, K), bias: (N) or undefined -> (..., N). Differentiable in all three.
torch::Tensor fast_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias = {});

// Whether fast_linear would use oneDNN for these tensors.
bool fast_linear_supported(const torch::Tensor& x, const torch::Tensor& weight);

}  // namespace lmzoo
