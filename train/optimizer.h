// AdamW with two parameter groups: weight decay on tensors of >= 2 dims, none on the rest.
#pragma once
#include <memory>

#include <torch/torch.h>

#include "train/train_config.h"

namespace lmzoo {

std::unique_ptr<torch::optim::AdamW> make_optimizer(torch::nn::Module& model, const TrainConfig& config);
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace lmzoo
