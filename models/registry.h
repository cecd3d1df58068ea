// The model registry: one handle for a model of any family, built from its config's arch.
// Leaves out: the families themselves (gpt.h, bert.h, bert_classifier.h, t5.h) and presets (presets.h).
#pragma once
#include <memory>
#include <string>

#include <torch/torch.h>

#include "models/bert.h"
#include "models/bert_classifier.h"
#include "models/config.h"
#include "models/gpt.h"
#include "models/t5.h"

namespace lmzoo {

// Exactly one member is set: gpt (arch gpt), bert (arch bert), classifier (arch bert with labels),
// t5 (arch t5).
struct AnyModel {
  GPT gpt{nullptr};
  Bert bert{nullptr};
  BertClassifier classifier{nullptr};
  T5 t5{nullptr};

  std::shared_ptr<torch::nn::Module> module() const;
  const ModelConfig& config() const;
  // "gpt", "bert", "bert-classifier" or "t5": what commands dispatch on.
  std::string kind() const;
};

AnyModel build_model(const ModelConfig& config);

}  // namespace lmzoo
