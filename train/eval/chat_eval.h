// Perplexity over the answers of prepared conversations: each example's scored tokens (the assistant's answers and
// their end-of-turn markers) given everything before them, the prompts never scored.
#pragma once
#include <torch/torch.h>

#include "data/chat/chat_data.h"
#include "models/gpt.h"
#include "train/eval/evaluator.h"

namespace lmzoo {

// EXAMPLES each scored as one row (an example longer than the model's context keeps its last max_seq_len + 1
// tokens), BATCH_SIZE rows per forward pass, in eval mode without gradients.
PerplexityResult chat_answer_perplexity(GPT& model, const ChatExamples& examples, int64_t batch_size,
                                        Precision precision, const torch::Device& device);

}  // namespace lmzoo
