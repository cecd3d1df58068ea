// Tiny model configs shared by the model tests (DESIGN.md: vocab 99, d_model 32, 2 layers, 4 heads).
#pragma once
#include "models/config.h"

namespace lmzoo::test {

inline ModelConfig tiny_gpt_config(int64_t vocab_size = 99, int64_t d_model = 32, int64_t n_head = 4,
                                   int64_t max_seq_len = 16) {
  ModelConfig c;
  c.vocab_size = vocab_size;
  c.d_model = d_model;
  c.n_layer = 2;
  c.n_head = n_head;
  c.max_seq_len = max_seq_len;
  return c;
}

// Tiny BERT: post-norm, biases, BERT init, learned positions.
inline ModelConfig tiny_bert_config(int64_t vocab_size = 99, int64_t d_model = 32, int64_t n_layer = 2,
                                    int64_t n_head = 4, int64_t max_seq_len = 32) {
  ModelConfig c;
  c.arch = Arch::kBert;
  c.init = InitScheme::kBert;
  c.norm_position = NormPosition::kPost;
  c.bias = true;
  c.vocab_size = vocab_size;
  c.d_model = d_model;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.max_seq_len = max_seq_len;
  return c;
}

}  // namespace lmzoo::test

namespace lmzoo::test {

// Tiny T5 (v1.0 shape by default: ReLU, tied); gated: geglu, untied, 3 heads of 8 (attn_dim 24 != 32)
// and 3 decoder layers, the v1.1 variations.
inline ModelConfig tiny_t5_config(bool gated = false, int64_t vocab_size = 99) {
  ModelConfig c;
  c.arch = Arch::kT5;
  c.vocab_size = vocab_size;
  c.d_model = 32;
  c.n_layer = 2;
  c.n_head = 4;
  c.d_ff = 64;
  c.max_seq_len = 64;
  c.norm = NormKind::kRmsNorm;
  c.norm_eps = 1e-6;
  c.activation = Activation::kRelu;
  c.position = Position::kRelative;
  c.relative_buckets = 8;
  c.relative_max_distance = 20;
  c.init = InitScheme::kT5;
  if (gated) {
    c.n_head = 3;
    c.head_dim = 8;
    c.n_decoder_layer = 3;
    c.activation = Activation::kGeglu;
    c.tie_embeddings = false;
  }
  return c;
}

}  // namespace lmzoo::test
