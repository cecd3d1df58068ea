// Next-token, masked-token and classification cross-entropy (in fp32 even under bf16 autocast).
#include "train/objectives.h"

#include "models/kernels/cross_entropy_kernel.h"
#include "models/kernels/fused_head_loss.h"

namespace lmzoo {

torch::Tensor next_token_loss(const torch::Tensor& logits, const torch::Tensor& targets) {
  const auto V = logits.size(-1);
  return fused_cross_entropy(logits.reshape({-1, V}).to(torch::kFloat), targets.reshape({-1}),  // (B*T, V), (B*T)
                             /*ignore_index=*/-1);
}

torch::Tensor causal_lm_loss(GPT& model, const TokenBatch& batch) {
  return next_token_loss(model->forward(batch.inputs), batch.targets);
}

torch::Tensor fused_next_token_loss(const torch::Tensor& hidden, const torch::Tensor& head_weight,
                                    const torch::Tensor& head_bias, int64_t vocab, const torch::Tensor& targets) {
  const auto C = hidden.size(-1);
  return fused_head_loss(hidden.reshape({-1, C}), head_weight.narrow(0, 0, vocab),  // (B*T, C), (V, C)
                         head_bias.defined() ? head_bias.narrow(0, 0, vocab) : head_bias, targets.reshape({-1}),
                         /*ignore_index=*/-1);
}

torch::Tensor masked_lm_loss(Bert& model, const MaskedBatch& batch, LossHead head) {
  auto hidden = model->hidden_states(batch.input_ids, batch.attention_mask, batch.token_type_ids);  // (B, T, C)
  const auto flat_labels = batch.labels.reshape({-1});                                              // (B*T)
  const auto positions = batch.scored_positions.defined() ? batch.scored_positions
                                                          : torch::nonzero(flat_labels >= 0).squeeze(1);  // (N)
  if (positions.size(0) == 0) return hidden.sum() * 0.0;
  auto picked = hidden.reshape({-1, hidden.size(-1)}).index_select(0, positions);  // (N, C)
  const auto targets = flat_labels.index_select(0, positions);                     // (N)
  if (head == LossHead::kFused) {
    return fused_next_token_loss(model->mlm_transform(picked), model->decoder_weight(), model->mlm_bias,
                                 model->config().vocab_size, targets);
  }
  auto logits = model->mlm_logits(picked);  // (N, V)
  return torch::nn::functional::cross_entropy(logits.to(torch::kFloat), targets);
}

torch::Tensor classification_loss(const torch::Tensor& logits, const torch::Tensor& labels) {
  return torch::nn::functional::cross_entropy(logits.to(torch::kFloat), labels);
}

}  // namespace lmzoo
