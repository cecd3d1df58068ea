// Target perplexity of an encoder-decoder (T5): summed target-token NLL under teacher forcing over
// prepared pairs or seeded span-corruption batches. Leaves out: generation-based metrics (BLEU, ROUGE) and
// bits per byte (the targets are not a contiguous text, so bytes are not counted).
#pragma once
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "data/batching/batcher_span.h"
#include "models/t5.h"
#include "train/eval/evaluator.h"

namespace lmzoo {

// Adds the NLL of batch's labels (>= 0) under model to result (tokens, nll_sum); eval mode, no gradients.
void add_target_nll(T5& model, const Seq2SeqBatch& batch, const torch::Device& device, Precision precision,
                    PerplexityResult& result);

// Target perplexity over examples in order, batch_size per forward pass, padded with pad_id (the decoder start).
PerplexityResult target_perplexity(T5& model, const std::vector<Seq2SeqExample>& examples, int64_t pad_id,
                                   int64_t batch_size, const torch::Device& device,
                                   Precision precision = Precision::kFp32);

}  // namespace lmzoo
