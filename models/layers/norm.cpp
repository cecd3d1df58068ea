// Normalisation layer: LayerNorm through the fused kernel in norm_kernel.cpp, RMSNorm computed in fp32.
#include "models/layers/norm.h"

#include "models/layers/norm_kernel.h"

namespace lmzoo {

NormImpl::NormImpl(int64_t dim, const std::string& kind, bool bias, double eps)
    : dim_(dim), rms_(kind == "rmsnorm"), eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
  if (bias && !rms_) this->bias = register_parameter("bias", torch::zeros({dim}));
}

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  if (!rms_) return fused_layer_norm(x, weight, bias, eps_);  // torch::layer_norm where the kernel does not apply
  auto x32 = x.to(torch::kFloat);
  auto normed = x32 * torch::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  return normed.to(x.scalar_type()) * weight;
}

Norm make_norm(const ModelConfig& config) {
  return Norm(config.d_model, config.norm, config.bias, config.norm_eps);
}

}  // namespace lmzoo
