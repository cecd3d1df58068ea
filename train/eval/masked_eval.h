// Masked-LM evaluation of a BERT over a token stream: masked-token perplexity with seeded, deterministic
// masking, and pseudo-log-likelihood perplexity (each token masked in turn; Salazar et al., 2020).
// Leaves out: whole-word pseudo-likelihood.
#pragma once
#include <cstdint>

#include <torch/torch.h>

#include "data/batching/batcher_mlm.h"
#include "data/corpus/shards.h"
#include "models/bert.h"
#include "train/eval/evaluator.h"

namespace lmzoo {

struct MaskedEvalOptions {
  int64_t batch_size = 8;  // rows per forward pass
  uint64_t seed = 1234;    // masking seed (masked-token perplexity)
  MaskingOptions masking;  // selection and corruption rates (masked-token perplexity)
  Precision precision = Precision::kFp32;  // autocast for the forward passes
};

// The stream is cut into consecutive windows of max_seq_len - 2 tokens, each framed [CLS] w [SEP] with SPECIAL's
// ids (std::invalid_argument when it lacks [CLS], [SEP], [MASK] or [PAD]).
// Masked-token perplexity scores the selected positions of every window; window i is masked with a
// generator seeded from (seed, i), so the result does not depend on the batch size. source_bytes of the
// result is the stream's bytes pro rata to the scored tokens, so bpb estimates bits per byte.
PerplexityResult masked_token_perplexity(Bert& model, const TokenStream& stream, int64_t source_bytes,
                                         const SpecialIds& special, const MaskedEvalOptions& options,
                                         const torch::Device& device);

// Every non-special token of every window is replaced by [MASK] alone and scored: nll_sum is minus the
// pseudo-log-likelihood, ppl = exp(-PLL / N), and bpb is exact (every token is scored once).
PerplexityResult pseudo_perplexity(Bert& model, const TokenStream& stream, int64_t source_bytes,
                                   const SpecialIds& special, const MaskedEvalOptions& options,
                                   const torch::Device& device);

}  // namespace lmzoo
