// Target perplexity of T5 models under teacher forcing. Shapes: B batch, T target length, V vocabulary.
#include "train/eval/seq2seq_eval.h"

#include <algorithm>

#include "base/interrupt.h"
#include "train/device/device.h"

namespace lmzoo {

void add_target_nll(T5& model, const Seq2SeqBatch& batch, const torch::Device& device, Precision precision,
                    PerplexityResult& result) {
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  torch::Tensor logits;
  {
    AutocastScope autocast(precision, device);
    logits = model->forward(batch.input_ids.to(device), batch.attention_mask.to(device),
                            batch.decoder_input_ids.to(device));  // (B, T, V)
  }
  const auto labels = batch.labels.to(device).reshape({-1});  // (B*T)
  const auto nll = torch::nn::functional::cross_entropy(
      logits.reshape({labels.size(0), -1}).to(torch::kFloat), labels,  // (B*T, V)
      torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-1).reduction(torch::kSum));
  result.nll_sum += nll.item<double>();
  result.tokens += (labels >= 0).sum().item<int64_t>();
  model->train(was_training);
}

PerplexityResult target_perplexity(T5& model, const std::vector<Seq2SeqExample>& examples, int64_t pad_id,
                                   int64_t batch_size, const torch::Device& device, Precision precision) {
  PerplexityResult result;
  for (size_t begin = 0; begin < examples.size(); begin += size_t(batch_size)) {
    throw_if_interrupted("evaluating");
    const size_t end = std::min(examples.size(), begin + size_t(batch_size));
    const std::vector<Seq2SeqExample> rows(examples.begin() + begin, examples.begin() + end);
    add_target_nll(model, collate_seq2seq(rows, pad_id), device, precision, result);
  }
  return result;
}

}  // namespace lmzoo
