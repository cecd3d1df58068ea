// Training objectives: (model, batch) -> mean loss. Models never compute their own loss.
#pragma once
#include <torch/torch.h>

#include "data/batching/batcher_causal.h"
#include "models/bert.h"
#include "models/gpt.h"

namespace lmzoo {

// Mean next-token cross-entropy of logits (B, T, V) against targets (B, T); targets < 0 ignored.
torch::Tensor next_token_loss(const torch::Tensor& logits, const torch::Tensor& targets);
// Causal LM: the model reads batch.inputs and is scored on batch.targets.
torch::Tensor causal_lm_loss(GPT& model, const TokenBatch& batch);
// Masked LM: mean cross-entropy over the positions whose label is >= 0 (the selected ones); the MLM
// head runs on those positions only. A batch with no selected position gives a zero loss (with grad).
torch::Tensor masked_lm_loss(Bert& model, const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                             const torch::Tensor& token_type_ids, const torch::Tensor& labels);
// Mean cross-entropy of class logits (B, n_labels) against class ids (B,).
torch::Tensor classification_loss(const torch::Tensor& logits, const torch::Tensor& labels);

}  // namespace lmzoo
