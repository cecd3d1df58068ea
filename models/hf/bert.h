// What BERT's kin (RoBERTa, DistilBERT) share with BERT: its config fields, its encoder's tensor names and the
// shape every BERT-family twin needs.
#pragma once
#include <string>

#include "models/hf/fields.h"
#include "models/hf/rule_list.h"

namespace lmzoo::hf {

// BERT's config.json fields into D.config (the classifier's labels when D.architecture is the classifier).
void read_bert_config(const HfFields& f, HfModelDescription& d);

// BERT's config.json keys for C (hidden_size ... position_embedding_type).
json bert_fields(const ModelConfig& c);

// BERT's encoder (embeddings and layers) with lmzoo names under LMZOO and HF names under HF ("bert.", "roberta.", "").
void bert_encoder_rules(RuleList& r, const ModelConfig& c, const std::string& lmzoo, const std::string& hf);

// Whether C is a bert-arch model at all; throws "no twin" when it is but is no BERT-family encoder (learned
// positions, post-norm LayerNorm, biases, an ungated activation, one key/value head per query head).
bool bert_family_shape(const ModelConfig& c);

// FAMILY.NAME with BERT's encoder parts (embeddings., encoder., pooler.) under PREFIX.
std::string with_encoder_prefix(const std::string& name, const std::string& prefix);

}  // namespace lmzoo::hf
