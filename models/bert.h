// BERT-style encoder-only model: word + position (learned or sinusoidal; rope, alibi and relative act in
// attention; learned with position_offset: RoBERTa's positions counted over real tokens from row offset, pads
// at row offset - 1) + token-type embeddings (none with type_vocab_size 0, DistilBERT), embedding norm, bidirectional blocks over a padding mask, MLM head
// tied to the word embeddings (rows padded to vocab_multiple), [CLS] pooler.
// Leaves out: the loss (train/), next-sentence prediction and task heads (classifiers).
#pragma once
#include <torch/torch.h>

#include "models/activation_checkpointing.h"
#include "models/blocks.h"
#include "models/config.h"
#include "models/layers/positions.h"

namespace lmzoo {

class BertImpl : public torch::nn::Module {
 public:
  explicit BertImpl(const ModelConfig& config);
  // input_ids: (B, T) int64. attention_mask: (B, T), 1 = real token, 0 = pad (undefined: all real);
  // pads are never attended to; each row needs at least one real token ([CLS]).
  // token_type_ids: (B, T) int64 (undefined: all 0; ignored with type_vocab_size 0 or 1, as RoBERTa and
  // DistilBERT take none).
  // Returns MLM logits (B, T, V).
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask = torch::Tensor(),
                        const torch::Tensor& token_type_ids = torch::Tensor());
  // Final hidden states (B, T, C); values at pad positions carry no meaning.
  torch::Tensor hidden_states(const torch::Tensor& input_ids, const torch::Tensor& attention_mask = torch::Tensor(),
                              const torch::Tensor& token_type_ids = torch::Tensor());
  // Pooled [CLS] output tanh(pooler(h[:, 0])): (B, C).
  torch::Tensor pooled(const torch::Tensor& input_ids, const torch::Tensor& attention_mask = torch::Tensor(),
                       const torch::Tensor& token_type_ids = torch::Tensor());

  // The two heads applied to hidden states (B, T, C): MLM logits (B, T, V) and pooled output (B, C).
  torch::Tensor mlm_logits(const torch::Tensor& hidden);
  // The MLM head before its decoder: dense, activation, LayerNorm (B, T, C) -> (B, T, C).
  torch::Tensor mlm_transform(const torch::Tensor& hidden);
  torch::Tensor pool(const torch::Tensor& hidden);
  // (padded V, C): the word embedding matrix when tied, else mlm_decoder's weight.
  torch::Tensor decoder_weight() const { return mlm_decoder ? mlm_decoder->weight : word_embeddings->weight; }

  const ModelConfig& config() const { return config_; }
  // Blocks the policy covers recompute their activations in the backward while training.
  void set_activation_checkpointing(CheckpointPolicy policy) { checkpointing_ = policy; }

  // position_embeddings: (max_seq_len + position_offset, C); token_type_embeddings null with type_vocab_size 0.
  torch::nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr}, token_type_embeddings{nullptr};
  PositionTables position_tables{nullptr};  // sinusoidal, rope and alibi positions only
  AttentionBias attn_bias{nullptr};  // alibi and relative positions only
  Norm emb_ln{nullptr};
  torch::nn::Dropout emb_dropout{nullptr};
  torch::nn::ModuleList h{nullptr};
  Norm ln_f{nullptr};  // pre-norm with final_norm only: normalises the last block's output
  torch::nn::Linear mlm_dense{nullptr};
  Norm mlm_ln{nullptr};
  torch::nn::Linear mlm_decoder{nullptr};  // null when tied (tie_embeddings)
  torch::Tensor mlm_bias;                  // (padded V,) output bias of the MLM decoder, always present
  torch::nn::Linear pooler{nullptr};

 private:
  void init_weights();
  // Block i on x: through checkpointed() when the policy covers it and the model is training.
  torch::Tensor run_block(size_t i, const torch::Tensor& x, const torch::Tensor& blocked,
                          const torch::Tensor& position_bias);
  ModelConfig config_;
  CheckpointPolicy checkpointing_;
};
TORCH_MODULE(Bert);

}  // namespace lmzoo
