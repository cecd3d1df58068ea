// Next-token cross-entropy (in fp32 even under bf16 autocast).
#include "train/objectives.h"

#include "train/cross_entropy_kernel.h"

namespace lmzoo {

torch::Tensor next_token_loss(const torch::Tensor& logits, const torch::Tensor& targets) {
  const auto V = logits.size(-1);
  return fused_cross_entropy(logits.reshape({-1, V}).to(torch::kFloat), targets.reshape({-1}),  // (B*T, V), (B*T)
                             /*ignore_index=*/-1);
}

torch::Tensor causal_lm_loss(GPT& model, const TokenBatch& batch) {
  return next_token_loss(model->forward(batch.inputs), batch.targets);
}

}  // namespace lmzoo
