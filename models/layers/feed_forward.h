// Position-wise feed-forward layer: c_fc -> activation -> c_proj (-> dropout by the caller).
#pragma once
#include <torch/torch.h>

#include "models/config.h"

namespace lmzoo {

// Applies a named activation (relu | gelu | gelu-tanh | silu).
torch::Tensor apply_activation(const torch::Tensor& x, const std::string& name);

class FeedForwardImpl : public torch::nn::Module {
 public:
  explicit FeedForwardImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear c_fc{nullptr}, c_proj{nullptr};

 private:
  std::string activation_;
};
TORCH_MODULE(FeedForward);

}  // namespace lmzoo
