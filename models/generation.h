// Autoregressive text generation for decoder-only models and T5: sampling with temperature, top-k and
// top-p (nucleus), greedy when temperature is 0; incremental decoding with the KV cache.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "models/gpt.h"
#include "models/t5.h"

namespace lmzoo {

struct SamplingOptions {
  int64_t max_new_tokens = 100;
  double temperature = 1.0;  // 0: greedy (argmax)
  int64_t top_k = 0;         // 0: no top-k filter
  double top_p = 1.0;        // 1: no nucleus filter
  uint64_t seed = 0;
  int64_t eos_id = -1;       // stop after generating this id (-1: never)
  std::vector<int64_t> stop_ids;  // stop after generating any of these too (a chat model's end-of-turn ids)
  bool stops_at(int64_t id) const {
    return id == eos_id || std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end();
  }
};

// Picks the next token from logits (V) under the options, drawing from generator.
int64_t sample_next_token(const torch::Tensor& logits, const SamplingOptions& options, at::Generator& generator);

// Continues prompt (non-empty) and returns only the new tokens.
std::vector<int64_t> generate_tokens(GPT& model, const std::vector<int64_t>& prompt, const SamplingOptions& options);

// T5: encodes input (non-empty) once, then decodes from the start id (pad, 0) with the T5 cache; returns
// the generated tokens (without the start id).
std::vector<int64_t> generate_t5_tokens(T5& model, const std::vector<int64_t>& input, const SamplingOptions& options);

}  // namespace lmzoo
