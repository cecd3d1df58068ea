// The model registry: arch (and labels) -> the family's module, and the family-independent accessors.
#include "models/registry.h"

#include <stdexcept>

#include "models/memory_estimate.h"

namespace lmzoo {

AnyModel build_model(const ModelConfig& config) {
  config.validate();
  const MemoryEstimate weights = estimate_weights(config);
  require_fits_in_host(weights, "a " + enum_name(config.arch) + " model of " + std::to_string(weights.parameters) +
                                    " parameters");
  switch (config.arch) {
    case Arch::kGpt: return AnyModel(GPT(config));
    case Arch::kBert: return config.labels.empty() ? AnyModel(Bert(config)) : AnyModel(BertClassifier(config));
    case Arch::kT5: return AnyModel(T5(config));
  }
  throw std::logic_error("arch outside its table");
}

std::shared_ptr<torch::nn::Module> AnyModel::module() const {
  return visit([](const auto& m) -> std::shared_ptr<torch::nn::Module> { return m.ptr(); });
}

const ModelConfig& AnyModel::config() const {
  return visit([](const auto& m) -> const ModelConfig& { return m->config(); });
}

void set_activation_checkpointing(AnyModel& model, CheckpointPolicy policy) {
  model.visit([policy](const auto& m) { m.ptr()->set_activation_checkpointing(policy); });
}

ModelKind model_kind(const ModelConfig& config) {
  switch (config.arch) {
    case Arch::kGpt: return ModelKind::kCausalLm;
    case Arch::kBert: return config.labels.empty() ? ModelKind::kMaskedLm : ModelKind::kClassifier;
    case Arch::kT5: return ModelKind::kSeq2seq;
  }
  throw std::logic_error("arch outside its table");
}

std::string family_name(const ModelConfig& config) {
  switch (model_kind(config)) {
    case ModelKind::kCausalLm: return "gpt";
    case ModelKind::kMaskedLm: return "bert";
    case ModelKind::kClassifier: return "bert-classifier";
    case ModelKind::kSeq2seq: return "t5";
  }
  throw std::logic_error("model kind outside its table");
}

}  // namespace lmzoo
