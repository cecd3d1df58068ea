// Training objectives: (model, batch) -> mean loss. Models never compute their own loss.
#pragma once
#include <torch/torch.h>

#include "data/batching/batcher_causal.h"
#include "models/bert.h"
#include "models/gpt.h"

namespace lmzoo {

// How a loss meets the output layer: logits made whole then scored, or the layer and the cross-entropy fused in
// row chunks (models/kernels/fused_head_loss.h: less memory, the same loss within rounding).
enum class LossHead { kLogits, kFused };

// Mean next-token cross-entropy of logits (B, T, V) against targets (B, T); targets < 0 ignored.
torch::Tensor next_token_loss(const torch::Tensor& logits, const torch::Tensor& targets);
// The same from hidden states (B, T, C) through the output layer HEAD_WEIGHT (padded V, C) (+ HEAD_BIAS (padded V)
// when defined), fused: only its first VOCAB rows score.
torch::Tensor fused_next_token_loss(const torch::Tensor& hidden, const torch::Tensor& head_weight,
                                    const torch::Tensor& head_bias, int64_t vocab, const torch::Tensor& targets);
// Causal LM: the model reads batch.inputs and is scored on batch.targets.
torch::Tensor causal_lm_loss(GPT& model, const TokenBatch& batch);
// A masked-LM batch: (B, T) ids, mask, token types and labels (-1 where not selected); scored_positions the flat
// indices of the selected positions (undefined: found from the labels, which on CUDA waits for the device).
struct MaskedBatch {
  torch::Tensor input_ids, attention_mask, token_type_ids, labels, scored_positions;
};
// Masked LM: mean cross-entropy over the positions whose label is >= 0 (the selected ones); the MLM
// head runs on those positions only. A batch with no selected position gives a zero loss (with grad).
torch::Tensor masked_lm_loss(Bert& model, const MaskedBatch& batch, LossHead head = LossHead::kLogits);
// Mean cross-entropy of class logits (B, n_labels) against class ids (B,).
torch::Tensor classification_loss(const torch::Tensor& logits, const torch::Tensor& labels);

}  // namespace lmzoo
