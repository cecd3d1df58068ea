// BERT sequence classifier: a Bert encoder, dropout and a linear layer on the pooled [CLS] output.
// Leaves out: token-level heads (tagging) and the loss (train/objectives.h).
#pragma once
#include <torch/torch.h>

#include "models/bert.h"

namespace lmzoo {

class BertClassifierImpl : public torch::nn::Module {
 public:
  // config.labels names the classes (at least 2); the encoder is built from the same config.
  explicit BertClassifierImpl(const ModelConfig& config);
  // Inputs as BertImpl::forward. Returns class logits (B, n_labels).
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask = torch::Tensor(),
                        const torch::Tensor& token_type_ids = torch::Tensor());
  const ModelConfig& config() const { return bert->config(); }
  // The encoder's blocks the policy covers recompute their activations in the backward while training.
  void set_activation_checkpointing(CheckpointPolicy policy) { bert->set_activation_checkpointing(policy); }

  Bert bert{nullptr};  // registered as "bert": a pretrained Bert's weights load into it unchanged
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Linear classifier{nullptr};
};
TORCH_MODULE(BertClassifier);

}  // namespace lmzoo
