// Answer-only perplexity: padded batches of examples, the summed cross-entropy of the scored targets.
#include "train/eval/chat_eval.h"

#include <algorithm>

#include "base/interrupt.h"
#include "train/device/device.h"

namespace lmzoo {

PerplexityResult chat_answer_perplexity(GPT& model, const ChatExamples& examples, int64_t batch_size,
                                        Precision precision, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  const int64_t context = model->config().max_seq_len;
  PerplexityResult result;
  for (int64_t first = 0; first < examples.size(); first += batch_size) {
    throw_if_interrupted("evaluating");
    const int64_t last = std::min(examples.size(), first + batch_size);
    int64_t T = 1;
    for (int64_t i = first; i < last; ++i) {
      T = std::max(T, std::min(context, examples.offsets[size_t(i) + 1] - examples.offsets[size_t(i)] - 1));
    }
    auto inputs = torch::zeros({last - first, T}, torch::kLong);              // (B, T)
    auto targets = torch::full({last - first, T}, int64_t(-1), torch::kLong);  // (B, T)
    auto in = inputs.accessor<int64_t, 2>(), out = targets.accessor<int64_t, 2>();
    for (int64_t i = first; i < last; ++i) {
      const int64_t end = examples.offsets[size_t(i) + 1];
      const int64_t begin = std::max(examples.offsets[size_t(i)], end - context - 1);  // the last context + 1 tokens
      for (int64_t t = 0; t + begin + 1 < end; ++t) {
        in[i - first][t] = examples.tokens[size_t(begin + t)];
        if (examples.scored[size_t(begin + t + 1)]) out[i - first][t] = examples.tokens[size_t(begin + t + 1)];
      }
    }
    torch::Tensor logits;
    {
      AutocastScope autocast(precision, device);
      logits = model->forward(inputs.to(device));  // (B, T, V)
    }
    const auto flat_targets = targets.to(device).reshape({-1});
    const auto nll = torch::nn::functional::cross_entropy(
        logits.to(torch::kFloat).reshape({-1, logits.size(-1)}), flat_targets,  // (B*T, V), (B*T)
        torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-1).reduction(torch::kSum));
    result.nll_sum += nll.item<double>();
    result.tokens += (flat_targets >= 0).sum().item<int64_t>();
  }
  model->train(was_training);
  return result;
}

}  // namespace lmzoo
