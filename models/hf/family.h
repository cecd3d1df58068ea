// One Hugging Face model family as lmzoo maps it (its classes, config.json both ways, its tensor names), and the
// registry of families that import, export and every per-family question read. A new family is a file in models/hf/,
// its classes in HfArchitecture (models/hf_config.h) and one line of the registry (models/hf/registry.cpp).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/hf/fields.h"
#include "models/hf_config.h"
#include "models/hf_weights.h"

namespace lmzoo::hf {

struct HfFamily {
  std::string model_type;
  std::vector<HfArchitecture> classes;  // the first: the class a config.json naming only model_type means
  // config.json, as transformers 4.x and 5.x write it, into D.config (D.architecture is set): throws HfFormatError
  // naming the first field whose value lmzoo does not compute.
  void (*read)(const HfFields& f, HfModelDescription& d);
  // The family's class for C when C has the switches that make it this family's (nullopt: not this family); throws
  // "no Hugging Face twin" naming what else the family needs when it does but something has no form here.
  std::optional<HfArchitecture> (*twin)(const ModelConfig& c);
  // The family's own config.json keys, beside the common ones (architectures, model_type, vocab_size, dtypes,
  // tie_word_embeddings, token ids), which it may override.
  json (*write)(const ModelConfig& c, HfArchitecture a, const HfTokenIds& ids);
  // Every lmzoo parameter class A stores and the HF tensors that hold it, in transformers' order.
  std::vector<HfWeightRule> (*weights)(const ModelConfig& c, HfArchitecture a);
  // The name save_pretrained gives a tensor found in a file as NAME (the base-model prefix added or dropped).
  std::string (*canonical_name)(HfArchitecture a, const std::string& name);
  // Whether a canonical tensor name carries nothing lmzoo needs (buffers, tied copies, heads lmzoo lacks).
  bool (*ignorable)(HfArchitecture a, const ModelConfig& c, const std::string& name);
  // {name, alias}: a file without the tensor NAME may hold it as ALIAS (T5's shared as encoder.embed_tokens).
  std::vector<std::pair<std::string, std::string>> aliases = {};
};

// Every family, in the order hf_architecture_of asks them (the more specific shape first).
const std::vector<const HfFamily*>& hf_families();

// The family of class A.
const HfFamily& hf_family_of(HfArchitecture a);

// The family whose model_type is TYPE, or nullptr.
const HfFamily* hf_family_named(const std::string& type);

// The model_type of every family, comma-separated.
std::string supported_model_types();

}  // namespace lmzoo::hf
