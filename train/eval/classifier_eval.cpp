// Classifier evaluation: batched forward passes in eval mode, a confusion matrix and its metrics.
#include "train/eval/classifier_eval.h"

#include <algorithm>

#include "base/interrupt.h"
#include "data/batching/batcher_mlm.h"
#include "train/device/device.h"

namespace lmzoo {

int64_t ClassificationResult::examples() const {
  int64_t n = 0;
  for (const auto& row : confusion) for (int64_t c : row) n += c;
  return n;
}

double ClassificationResult::accuracy() const {
  int64_t correct = 0;
  for (size_t i = 0; i < confusion.size(); ++i) correct += confusion[i][i];
  return examples() ? double(correct) / double(examples()) : 0.0;
}

double ClassificationResult::macro_f1() const {
  double sum = 0.0;
  int64_t counted = 0;
  for (size_t k = 0; k < confusion.size(); ++k) {
    int64_t tp = confusion[k][k], fn = 0, fp = 0;
    for (size_t j = 0; j < confusion.size(); ++j) {
      if (j == k) continue;
      fn += confusion[k][j];
      fp += confusion[j][k];
    }
    if (tp + fn + fp == 0) continue;
    sum += 2.0 * double(tp) / double(2 * tp + fp + fn);
    ++counted;
  }
  return counted ? sum / double(counted) : 0.0;
}

nlohmann::json ClassificationResult::to_json() const {
  return {{"examples", examples()},
          {"accuracy", accuracy()},
          {"macro_f1", macro_f1()},
          {"loss", examples() ? nll_sum / double(examples()) : 0.0}};
}

ClassificationResult evaluate_classifier(BertClassifier& model, const Tokenizer& tokenizer,
                                         const std::vector<LabelledText>& examples, int64_t batch_size,
                                         const torch::Device& device, Precision precision) {
  torch::NoGradGuard no_grad;
  model->eval();
  const auto& labels = model->config().labels;
  ClassificationResult result;
  result.labels = labels;
  result.confusion.assign(labels.size(), std::vector<int64_t>(labels.size(), 0));
  for (size_t start = 0; start < examples.size(); start += size_t(batch_size)) {
    throw_if_interrupted("evaluating");
    const size_t end = std::min(examples.size(), start + size_t(batch_size));
    std::vector<MlmExample> framed;
    std::vector<int64_t> truth;
    for (size_t i = start; i < end; ++i) {
      framed.push_back(frame_labelled(tokenizer, examples[i], model->config().max_seq_len));
      truth.push_back(label_id(labels, examples[i].label));
    }
    const MlmBatch b = collate_mlm(framed, tokenizer.special().pad);
    torch::Tensor logits;
    {
      AutocastScope autocast(precision, device);
      logits = model->forward(b.input_ids.to(device), b.attention_mask.to(device), b.token_type_ids.to(device));
    }
    logits = logits.to(torch::kCPU, torch::kFloat);  // (B, n_labels)
    auto log_probs = torch::log_softmax(logits, -1);
    auto predicted = logits.argmax(-1);
    for (size_t r = 0; r < truth.size(); ++r) {
      result.confusion[truth[r]][predicted[int64_t(r)].item<int64_t>()] += 1;
      result.nll_sum -= log_probs[int64_t(r)][truth[r]].item<double>();
    }
  }
  return result;
}

std::vector<std::pair<std::string, double>> classify_text(BertClassifier& model, const Tokenizer& tokenizer,
                                                          const std::string& text, const std::string& text_pair,
                                                          const torch::Device& device) {
  torch::NoGradGuard no_grad;
  model->eval();
  const auto& labels = model->config().labels;
  const MlmBatch b = collate_mlm({frame_labelled(tokenizer, {text, text_pair, ""}, model->config().max_seq_len)},
                                 tokenizer.special().pad);
  auto probs = torch::softmax(
      model->forward(b.input_ids.to(device), b.attention_mask.to(device), b.token_type_ids.to(device))
          .to(torch::kCPU, torch::kFloat)[0], -1);  // (n_labels)
  std::vector<std::pair<std::string, double>> out;
  for (size_t k = 0; k < labels.size(); ++k) out.emplace_back(labels[k], probs[int64_t(k)].item<double>());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace lmzoo
