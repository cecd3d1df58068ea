// Normalisation layer: LayerNorm or RMSNorm through the fused kernels in norm_kernel.cpp.
#include "models/layers/norm.h"

#include "models/kernels/norm_kernel.h"

namespace lmzoo {

NormImpl::NormImpl(int64_t dim, NormKind kind, bool bias, double eps)
    : dim_(dim), rms_(kind == NormKind::kRmsNorm), eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
  if (bias && !rms_) this->bias = register_parameter("bias", torch::zeros({dim}));
}

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  // Under autocast a bf16 input (e.g. BERT's MLM dense output) meets fp32 parameters: normalise in the
  // parameters' precision, as autocast does for norms on CUDA.
  const auto input = x.scalar_type() == weight.scalar_type() ? x : x.to(weight.scalar_type());
  // Plain ops where the kernels do not apply (RMSNorm's in fp32).
  return rms_ ? fused_rms_norm(input, weight, eps_) : fused_layer_norm(input, weight, bias, eps_);
}

Norm make_norm(const ModelConfig& config) {
  return Norm(config.d_model, config.norm, config.bias, config.norm_eps);
}

}  // namespace lmzoo
