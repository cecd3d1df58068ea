// Next-token, masked-token and classification cross-entropy (in fp32 even under bf16 autocast).
#include "train/objectives.h"

#include "models/kernels/cross_entropy_kernel.h"

namespace lmzoo {

torch::Tensor next_token_loss(const torch::Tensor& logits, const torch::Tensor& targets) {
  const auto V = logits.size(-1);
  return fused_cross_entropy(logits.reshape({-1, V}).to(torch::kFloat), targets.reshape({-1}),  // (B*T, V), (B*T)
                             /*ignore_index=*/-1);
}

torch::Tensor causal_lm_loss(GPT& model, const TokenBatch& batch) {
  return next_token_loss(model->forward(batch.inputs), batch.targets);
}

torch::Tensor masked_lm_loss(Bert& model, const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                             const torch::Tensor& token_type_ids, const torch::Tensor& labels) {
  auto hidden = model->hidden_states(input_ids, attention_mask, token_type_ids);  // (B, T, C)
  const auto selected = labels >= 0;                                              // (B, T) bool
  auto picked = hidden.index({selected});                                         // (N, C)
  if (picked.size(0) == 0) return hidden.sum() * 0.0;
  auto logits = model->mlm_logits(picked);                                        // (N, V)
  return torch::nn::functional::cross_entropy(logits.to(torch::kFloat), labels.index({selected}));
}

torch::Tensor classification_loss(const torch::Tensor& logits, const torch::Tensor& labels) {
  return torch::nn::functional::cross_entropy(logits.to(torch::kFloat), labels);
}

}  // namespace lmzoo
