// Residual add + norm in one CUDA kernel (--fused-add-norm): sum = x + out and norm(sum) in one pass over the rows
// forward and one backward, where plain ops take an add, a norm and, backward, a separate gradient addition.
// Runs lmzoo's own kernels (models/kernels/cuda/) in builds with a CUDA compiler; elsewhere the callers take
// the plain ops.
#pragma once
#include <string>

#include <torch/torch.h>

namespace lmzoo {

struct SumAndNorm {
  torch::Tensor sum;     // x + out, in the dtype x + out has
  torch::Tensor normed;  // norm(sum), in the weight's dtype
};

// Process-wide: whether the models' blocks send "residual add, then norm" to the fused kernel (where it applies).
bool fused_add_norm_enabled();

// Switches fused add + norm on (or off) for its lifetime and restores the previous setting afterwards.
class FusedAddNormScope {
 public:
  explicit FusedAddNormScope(bool on);
  ~FusedAddNormScope();
  FusedAddNormScope(const FusedAddNormScope&) = delete;
  FusedAddNormScope& operator=(const FusedAddNormScope&) = delete;

 private:
  bool previous_;
};

// Why the fused kernel cannot run on `device` with this build ("" when it can).
std::string fused_add_norm_unavailable_reason(const torch::Device& device);

// True when fused_add_norm takes these tensors: switched on, the kernel in this build, CUDA tensors of the same
// shape, x's dtype that of x + out, the weight fp32 or x's dtype, rows of at most 6016 features.
bool fused_add_norm_applies(const torch::Tensor& x, const torch::Tensor& out, const torch::Tensor& weight,
                            const torch::Tensor& bias);

// {x + out, LayerNorm (RMSNorm when rms) of it with gain `weight` and optional `bias`}, differentiable in x, out,
// weight and bias. Only where fused_add_norm_applies.
SumAndNorm fused_add_norm(const torch::Tensor& x, const torch::Tensor& out, const torch::Tensor& weight,
                          const torch::Tensor& bias, double eps, bool rms);

}  // namespace lmzoo
