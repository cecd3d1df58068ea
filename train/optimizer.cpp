// AdamW parameter groups (decay only on matrices and embeddings, as GPT-2 / nanoGPT do).
#include "train/optimizer.h"

namespace lmzoo {

std::vector<torch::Tensor> ParameterGroups::in_order() const {
  std::vector<torch::Tensor> all(decay);
  all.insert(all.end(), no_decay.begin(), no_decay.end());
  return all;
}

ParameterGroups parameter_groups(torch::nn::Module& model) {
  ParameterGroups groups;
  for (auto& p : model.parameters()) {
    if (!p.requires_grad()) continue;
    (p.dim() >= 2 ? groups.decay : groups.no_decay).push_back(p);
  }
  return groups;
}

std::unique_ptr<torch::optim::AdamW> make_optimizer(const ParameterGroups& params, const TrainConfig& config) {
  auto options = torch::optim::AdamWOptions(config.lr).betas({config.beta1, config.beta2}).eps(1e-8);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(params.decay, std::make_unique<torch::optim::AdamWOptions>(
                                        torch::optim::AdamWOptions(options).weight_decay(config.weight_decay)));
  groups.emplace_back(params.no_decay,
                      std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(options).weight_decay(0.0)));
  return std::make_unique<torch::optim::AdamW>(std::move(groups), options);
}

std::unique_ptr<torch::optim::AdamW> make_optimizer(torch::nn::Module& model, const TrainConfig& config) {
  return make_optimizer(parameter_groups(model), config);
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
}

}  // namespace lmzoo
