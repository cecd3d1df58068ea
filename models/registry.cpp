// The model registry: arch (and labels) -> the family's module.
#include "models/registry.h"

#include <stdexcept>

namespace lmzoo {

AnyModel build_model(const ModelConfig& config) {
  config.validate();
  AnyModel m;
  if (config.arch == "gpt") {
    m.gpt = GPT(config);
  } else if (config.arch == "bert" && config.labels.empty()) {
    m.bert = Bert(config);
  } else if (config.arch == "bert") {
    m.classifier = BertClassifier(config);
  } else if (config.arch == "t5") {
    m.t5 = T5(config);
  } else {
    throw std::invalid_argument("unknown arch '" + config.arch + "'");
  }
  return m;
}

std::shared_ptr<torch::nn::Module> AnyModel::module() const {
  if (gpt) return gpt.ptr();
  if (bert) return bert.ptr();
  if (classifier) return classifier.ptr();
  if (t5) return t5.ptr();
  throw std::logic_error("empty AnyModel");
}

const ModelConfig& AnyModel::config() const {
  if (gpt) return gpt->config();
  if (bert) return bert->config();
  if (classifier) return classifier->config();
  if (t5) return t5->config();
  throw std::logic_error("empty AnyModel");
}

std::string AnyModel::kind() const {
  if (gpt) return "gpt";
  if (bert) return "bert";
  if (classifier) return "bert-classifier";
  if (t5) return "t5";
  throw std::logic_error("empty AnyModel");
}

}  // namespace lmzoo
