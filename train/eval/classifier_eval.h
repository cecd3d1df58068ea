// Sequence-classification evaluation: accuracy, macro-F1 and mean cross-entropy over a labelled file,
// and the label distribution of one input (what lmzoo generate prints for a classifier).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "data/corpus/labelled_text.h"
#include "models/bert_classifier.h"
#include "train/train_enums.h"

namespace lmzoo {

struct ClassificationResult {
  std::vector<std::string> labels;
  std::vector<std::vector<int64_t>> confusion;  // [true label][predicted label] counts
  double nll_sum = 0.0;                          // cross-entropy summed over examples, nats

  int64_t examples() const;
  double accuracy() const;
  // Unweighted mean over labels of F1 = 2 tp / (2 tp + fp + fn); a label with no true and no predicted
  // example is left out of the mean.
  double macro_f1() const;
  nlohmann::json to_json() const;  // {"examples","accuracy","macro_f1","loss"}
};

ClassificationResult evaluate_classifier(BertClassifier& model, const Tokenizer& tokenizer,
                                         const std::vector<LabelledText>& examples, int64_t batch_size,
                                         const torch::Device& device, Precision precision = Precision::kFp32);

// (label, probability) for every label, most likely first.
std::vector<std::pair<std::string, double>> classify_text(BertClassifier& model, const Tokenizer& tokenizer,
                                                          const std::string& text, const std::string& text_pair,
                                                          const torch::Device& device);

}  // namespace lmzoo
