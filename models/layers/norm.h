// Normalisation layer: LayerNorm (optional bias) or RMSNorm (no bias, variance in fp32).
#pragma once
#include <torch/torch.h>

#include "models/config.h"

namespace lmzoo {

class NormImpl : public torch::nn::Module {
 public:
  NormImpl(int64_t dim, NormKind kind, bool bias, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  double eps() const { return eps_; }
  bool rms() const { return rms_; }

  torch::Tensor weight, bias;  // bias undefined when absent

 private:
  int64_t dim_;
  bool rms_;
  double eps_;
};
TORCH_MODULE(Norm);

// The norm a config asks for, over d_model.
Norm make_norm(const ModelConfig& config);

}  // namespace lmzoo
