// The model registry: one closed type (a std::variant) over the families, built from a config; every operation
// that differs by family dispatches with std::visit, so adding a family makes the compiler name each site.
// Leaves out: the families themselves (gpt.h, bert.h, bert_classifier.h, t5.h) and presets (presets.h).
#pragma once
#include <memory>
#include <variant>

#include <torch/torch.h>

#include "base/enum_table.h"
#include "models/activation_checkpointing.h"
#include "models/bert.h"
#include "models/bert_classifier.h"
#include "models/config.h"
#include "models/gpt.h"
#include "models/t5.h"

namespace lmzoo {

// The module of each family (Arch, models/model_enums.h): gpt, bert (a BertClassifier when the config has labels),
// t5.
using ModelVariant = std::variant<GPT, Bert, BertClassifier, T5>;

// A callable from lambdas, one per family: std::visit(Overloaded{[](const GPT&) {...}, ...}, variant).
template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// What a model is used as, one value per module of ModelVariant: what eval scores and generate produces with it.
enum class ModelKind {
  kCausalLm,    // gpt: next-token perplexity, sampled or searched continuations
  kMaskedLm,    // bert: masked-token perplexity, filled masks
  kClassifier,  // bert with labels: accuracy, labels
  kSeq2seq,     // t5: span-corruption or target perplexity, sampled or searched outputs
};

// The kind of a model of CONFIG.
ModelKind model_kind(const ModelConfig& config);

// "gpt", "bert", "bert-classifier" (a bert with labels) or "t5": the family as messages name it.
std::string family_name(const ModelConfig& config);

class AnyModel {
 public:
  explicit AnyModel(ModelVariant model) : model_(std::move(model)) {}

  // f called with the family's module handle (const GPT&, const Bert&, ...); f must accept every family.
  template <typename F>
  decltype(auto) visit(F&& f) const {
    return std::visit(std::forward<F>(f), model_);
  }
  template <typename M>
  bool is() const {
    return std::holds_alternative<M>(model_);
  }
  // The handle of family M; throws std::logic_error when the model is another family.
  template <typename M>
  M as() const {
    if (const M* m = std::get_if<M>(&model_)) return *m;
    throw std::logic_error("the model is a " + family_name(config()) + ", not the family asked for");
  }

  std::shared_ptr<torch::nn::Module> module() const;
  const ModelConfig& config() const;
  Arch arch() const { return config().arch; }
  bool is_classifier() const { return is<BertClassifier>(); }

 private:
  ModelVariant model_;
};

// Sets every family's block checkpointing (both stacks of a t5, the encoder of a classifier).
void set_activation_checkpointing(AnyModel& model, CheckpointPolicy policy);

// The family of config: arch gpt, bert (with labels: a classifier) or t5. Validates config first, and refuses a
// model whose weights alone exceed this machine's memory (std::runtime_error) before allocating any.
AnyModel build_model(const ModelConfig& config);

}  // namespace lmzoo
