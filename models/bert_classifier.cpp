// BERT sequence classifier: logits = classifier(dropout(pooler output)), classifier N(0, 0.02), bias 0.
#include "models/bert_classifier.h"

#include <stdexcept>

namespace lmzoo {

BertClassifierImpl::BertClassifierImpl(const ModelConfig& config) {
  if (config.labels.size() < 2) throw std::invalid_argument("a BERT classifier needs at least 2 labels");
  bert = register_module("bert", Bert(config));
  dropout = register_module("dropout", torch::nn::Dropout(config.dropout));
  const int64_t n_labels = int64_t(config.labels.size());
  classifier = register_module("classifier", torch::nn::Linear(config.d_model, n_labels));
  torch::NoGradGuard no_grad;
  classifier->weight.normal_(0.0, 0.02);
  classifier->bias.zero_();
}

torch::Tensor BertClassifierImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                          const torch::Tensor& token_type_ids) {
  return classifier(dropout(bert->pooled(input_ids, attention_mask, token_type_ids)));  // (B, n_labels)
}

}  // namespace lmzoo
