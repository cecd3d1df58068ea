// AdamW with two parameter groups: weight decay on tensors of >= 2 dims, none on the rest.
#pragma once
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "train/train_config.h"

namespace lmzoo {

// The trainable parameters in AdamW's order: the decayed group (>= 2 dims), then the undecayed one.
struct ParameterGroups {
  std::vector<torch::Tensor> decay, no_decay;
  std::vector<torch::Tensor> in_order() const;  // decay, then no_decay
};
ParameterGroups parameter_groups(torch::nn::Module& model);

std::unique_ptr<torch::optim::AdamW> make_optimizer(const ParameterGroups& groups, const TrainConfig& config);
std::unique_ptr<torch::optim::AdamW> make_optimizer(torch::nn::Module& model, const TrainConfig& config);
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace lmzoo
