// The registry of Hugging Face families: the one table import, export, hf_architecture_of and the model_type lists
// read. A new family is one line here (and its file).
#include "models/hf/family.h"

#include <algorithm>

namespace lmzoo::hf {

const HfFamily& gpt_neox_family();
const HfFamily& qwen2_family();
const HfFamily& mistral_family();
const HfFamily& llama_family();
const HfFamily& gpt2_family();
const HfFamily& distilbert_family();
const HfFamily& roberta_family();
const HfFamily& bert_family();
const HfFamily& t5_family();
const HfFamily& phi3_family();

const std::vector<const HfFamily*>& hf_families() {
  // Asked in this order for a model's twin: within an arch, the family with the more specific switches first.
  static const std::vector<const HfFamily*> families = {
      &gpt_neox_family(), &qwen2_family(),   &mistral_family(), &llama_family(), &gpt2_family(),
      &distilbert_family(), &roberta_family(), &bert_family(),    &t5_family(),
      &phi3_family(),
  };
  return families;
}

const HfFamily& hf_family_of(HfArchitecture a) {
  for (const HfFamily* family : hf_families()) {
    for (HfArchitecture c : family->classes) {
      if (c == a) return *family;
    }
  }
  throw std::logic_error("Hugging Face class " + enum_name(a) + " is in no family of the registry");
}

const HfFamily* hf_family_named(const std::string& type) {
  for (const HfFamily* family : hf_families()) {
    if (family->model_type == type) return family;
  }
  return nullptr;
}

std::string supported_model_types() {
  std::vector<std::string> types;  // in the classes' order, each once
  for (const auto& entry : EnumTable<HfArchitecture>::entries) {
    const std::string& type = hf_family_of(entry.value).model_type;
    if (std::find(types.begin(), types.end(), type) == types.end()) types.push_back(type);
  }
  std::string list;
  for (const auto& type : types) list += (list.empty() ? "" : ", ") + type;
  return list;
}

}  // namespace lmzoo::hf
