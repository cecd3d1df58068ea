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

}  // namespace lmzoo::test
