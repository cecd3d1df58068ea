// Sliding-window perplexity (DESIGN.md): every token after the first scored once, with as much
// left context as the window allows; nats/token, perplexity and bits per byte.
#pragma once
#include <cstdint>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "data/corpus/shards.h"
#include "models/gpt.h"
#include "train/train_enums.h"

namespace lmzoo {

struct PerplexityOptions {
  int64_t stride = 0;      // 0: half the context length
  int64_t batch_size = 8;  // windows per forward pass
  Precision precision = Precision::kFp32;
};

struct PerplexityResult {
  int64_t tokens = 0;         // scored tokens
  double nll_sum = 0.0;       // total negative log-likelihood, nats
  int64_t source_bytes = 0;   // UTF-8 bytes of the text the tokens came from
  double nll() const { return tokens ? nll_sum / double(tokens) : 0.0; }
  double ppl() const;
  double bits_per_byte() const;
  nlohmann::json to_json() const;  // {"tokens","nll","ppl","bpb","bytes"}
};

PerplexityResult sliding_window_perplexity(GPT& model, const TokenStream& stream, int64_t source_bytes,
                                           const PerplexityOptions& options, const torch::Device& device);

}  // namespace lmzoo
