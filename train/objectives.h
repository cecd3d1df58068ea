// Training objectives: (model, batch) -> mean loss. Models never compute their own loss.
#pragma once
#include <torch/torch.h>

#include "data/batcher_causal.h"
#include "models/gpt.h"

namespace lmzoo {

// Mean next-token cross-entropy of logits (B, T, V) against targets (B, T); targets < 0 ignored.
torch::Tensor next_token_loss(const torch::Tensor& logits, const torch::Tensor& targets);
// Causal LM: the model reads batch.inputs and is scored on batch.targets.
torch::Tensor causal_lm_loss(GPT& model, const TokenBatch& batch);

}  // namespace lmzoo
