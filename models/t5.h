// T5 encoder-decoder: shared token embedding, encoder stack (bidirectional, padding mask), decoder stack
// (causal self-attention, cross-attention over the encoder output), relative position bias per stack (or
// another position scheme of the config, per stack), RMSNorm, LM head tied (v1.0, decoder output scaled by d_model^-0.5) or untied (v1.1). Returns logits.
// Leaves out: the loss (train/), beam search (models/generation), HF checkpoint import.
#pragma once
#include <vector>

#include <torch/torch.h>

#include "models/activation_checkpointing.h"
#include "models/blocks.h"
#include "models/config.h"
#include "models/layers/positions.h"
#include "models/layers/relative_position.h"

namespace lmzoo {

// Parameter names against HF T5ForConditionalGeneration (block i, stack = encoder | decoder):
//   shared.weight, lm_head.weight (untied)                      same names
//   stack.rel_bias.weight                                       stack.block.0.layer.0.SelfAttention.relative_attention_bias.weight
//   stack.h.i.ln_1 / attn.c_attn (rows [q; k; v]) / attn.c_proj  layer.0.layer_norm / SelfAttention.q,k,v / .o
//   decoder.h.i.ln_2 / cross_attn.c_q / c_kv (rows [k; v]) / c_proj   layer.1.layer_norm / EncDecAttention.q / k,v / o
//   stack.h.i.ln_2 (encoder) or ln_3 (decoder), mlp.c_fc / c_fc_lin / c_proj   last layer's layer_norm,
//                                                               DenseReluDense.wi (or wi_0) / wi_1 / wo
//   stack.ln_f.weight                                           stack.final_layer_norm.weight
// Sentinels: lmzoo's <extra_id_i> is id 7 + i; in T5's vocabulary it is 32099 - i.

// Decoder state for incremental decoding, one entry per decoder layer: self-attention keys/values
// (extended in place each step) and cross-attention keys/values (computed once from encoder_hidden).
struct T5Cache {
  std::vector<LayerKVCache> self, cross;
  torch::Tensor encoder_hidden;  // the encoder output the cross entries belong to
  int64_t length() const { return self.empty() ? 0 : self[0].length(); }
};

// One stack: (+ learned or sinusoidal positions) -> dropout -> blocks (TransformerBlock in the encoder,
// DecoderBlock in the decoder, sharing one relative or ALiBi position bias; rope acts in self-attention)
// -> ln_f -> dropout.
class T5StackImpl : public torch::nn::Module {
 public:
  T5StackImpl(const ModelConfig& config, bool decoder);
  // x: embeddings (B, T, C). blocked: bool, broadcastable to (B, nh, T, S); the decoder adds the causal
  // mask itself. memory, memory_blocked, cache: decoder only (see T5Impl::decode). Returns (B, T, C).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& blocked,
                        const torch::Tensor& memory = torch::Tensor(),
                        const torch::Tensor& memory_blocked = torch::Tensor(), T5Cache* cache = nullptr);
  // Blocks the policy covers recompute their activations in the backward while training (never with a cache).
  void set_activation_checkpointing(CheckpointPolicy policy) { checkpointing_ = policy; }

  torch::nn::ModuleList h{nullptr};
  RelativePositionBias rel_bias{nullptr};  // relative: (buckets, nh), HF holds it in block 0's self-attention
  PositionTables position_tables{nullptr};  // sinusoidal, rope and alibi positions only
  AttentionBias attn_bias{nullptr};        // alibi only
  torch::nn::Embedding wpe{nullptr};       // learned positions only
  Norm ln_f{nullptr};                      // null without a final norm
  torch::nn::Dropout dropout{nullptr};

 private:
  bool decoder_;
  Position position_;       // the config's scheme (add_position_encoding)
  int64_t table_length_;    // positions a table-based scheme (learned, sinusoidal, rope) covers; 0: no limit
  CheckpointPolicy checkpointing_;
  bool checkpoints(size_t block, const T5Cache* cache) const;
  // Encoder block i, and decoder block i without a cache, through checkpointed().
  torch::Tensor checkpointed_encoder_block(size_t i, const torch::Tensor& y, const torch::Tensor& blocked,
                                           const torch::Tensor& position_bias);
  torch::Tensor checkpointed_decoder_block(size_t i, const torch::Tensor& y, const AttentionMask& self_mask,
                                           const torch::Tensor& position_bias, const torch::Tensor& memory,
                                           const torch::Tensor& memory_blocked);
};
TORCH_MODULE(T5Stack);

class T5Impl : public torch::nn::Module {
 public:
  explicit T5Impl(const ModelConfig& config);
  // input_ids: (B, S) int64; attention_mask: (B, S), 1 real / 0 pad (undefined: all real; each row needs
  // a real token); decoder_input_ids: (B, T) int64, the targets shifted right after the start id (pad, 0).
  // Returns logits (B, T, V).
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                        const torch::Tensor& decoder_input_ids);
  // Encoder output (B, S, C); values at pad positions carry no meaning.
  torch::Tensor encode(const torch::Tensor& input_ids, const torch::Tensor& attention_mask = torch::Tensor());
  // Decoder logits (B, T, V) over encoder_hidden (B, S, C), whose pads attention_mask marks. With a cache,
  // decoder_input_ids holds only the new tokens, positions continue after the cached ones and the cache
  // is extended in place; encoder_hidden may then be undefined after the first call.
  torch::Tensor decode(const torch::Tensor& decoder_input_ids, const torch::Tensor& encoder_hidden,
                       const torch::Tensor& attention_mask = torch::Tensor(), T5Cache* cache = nullptr);
  // decode() before the LM head: final decoder hidden states (B, T, C).
  torch::Tensor decoder_hidden_states(const torch::Tensor& decoder_input_ids, const torch::Tensor& encoder_hidden,
                                      const torch::Tensor& attention_mask = torch::Tensor(),
                                      T5Cache* cache = nullptr);
  // LM head on decoder hidden states: (B, T, C) -> (B, T, V); tied: hidden * d_model^-0.5 first.
  torch::Tensor lm_logits(const torch::Tensor& hidden);
  // What the LM head multiplies: hidden (B, T, C) as is, or tied: times d_model^-0.5.
  torch::Tensor lm_head_input(const torch::Tensor& hidden) const;
  torch::Tensor lm_head_weight() const { return lm_head ? lm_head->weight : shared->weight; }

  const ModelConfig& config() const { return config_; }
  T5Cache new_cache() const;
  // Both stacks: blocks the policy covers recompute their activations in the backward while training.
  void set_activation_checkpointing(CheckpointPolicy policy);

  torch::nn::Embedding shared{nullptr};
  T5Stack encoder{nullptr}, decoder{nullptr};
  torch::nn::Linear lm_head{nullptr};  // null when tied

 private:
  void init_weights();
  torch::Tensor memory_blocked(const torch::Tensor& attention_mask, int64_t batch, int64_t length) const;
  ModelConfig config_;
};
TORCH_MODULE(T5);

}  // namespace lmzoo
