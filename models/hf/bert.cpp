// BERT (BertForMaskedLM, BertModel, BertForSequenceClassification): learned positions, token types, post-norm
// LayerNorm; the masked-LM head, the pooler, the classifier.
#include "models/hf/bert.h"

#include "models/hf/family.h"

namespace lmzoo::hf {

void read_bert_config(const HfFields& f, HfModelDescription& d) {
  ModelConfig& c = d.config;
  c.arch = Arch::kBert;
  c.vocab_size = f.integer("vocab_size");
  c.d_model = f.integer("hidden_size");
  c.n_layer = f.integer("num_hidden_layers");
  c.n_head = f.integer("num_attention_heads");
  c.d_ff = f.integer("intermediate_size");
  c.max_seq_len = f.integer("max_position_embeddings");
  c.type_vocab_size = f.integer("type_vocab_size", 2);
  if (c.type_vocab_size < 1) {
    throw HfFormatError("config.json: type_vocab_size " + std::to_string(c.type_vocab_size) +
                        " is not supported (the embeddings read token type 0; at least 1)");
  }
  c.activation = activation_of("hidden_act", f.text("hidden_act", "gelu"));
  c.norm_eps = f.number("layer_norm_eps", 1e-12);
  c.dropout = merged_dropout(f, {"hidden_dropout_prob", "attention_probs_dropout_prob"}, d.notes);
  c.bias = true;
  c.norm = NormKind::kLayerNorm;
  c.norm_position = NormPosition::kPost;
  c.position = Position::kLearned;
  c.tie_embeddings = f.boolean("tie_word_embeddings", true);
  c.init = InitScheme::kBert;
  f.require_text("position_embedding_type", "absolute", "absolute");  // 5.x removed the key: absent is absolute
  f.require_bool("is_decoder", false, false);
  f.require_bool("add_cross_attention", false, false);
  if (d.architecture != HfArchitecture::kBertForSequenceClassification) return;
  const std::string problem = f.text("problem_type", "single_label_classification");
  if (problem != "single_label_classification") {
    throw HfFormatError("config.json: problem_type '" + problem + "' is not supported (lmzoo classifies single labels)");
  }
  if (!f.has("id2label") || !f.raw().at("id2label").is_object()) {
    throw HfFormatError("config.json: a BertForSequenceClassification needs id2label");
  }
  const json& id2label = f.raw().at("id2label");
  c.labels.resize(id2label.size());
  for (const auto& item : id2label.items()) {
    size_t id = 0;
    try {
      id = std::stoul(item.key());
    } catch (const std::exception&) {
      id = c.labels.size();
    }
    if (id >= c.labels.size() || !item.value().is_string()) {
      throw HfFormatError("config.json: id2label must map 0.." + std::to_string(c.labels.size() - 1) +
                          " to label names");
    }
    c.labels[id] = item.value().get<std::string>();
  }
}

json bert_fields(const ModelConfig& c) {
  return {{"hidden_size", c.d_model}, {"num_hidden_layers", c.n_layer}, {"num_attention_heads", c.n_head},
          {"intermediate_size", c.ff_dim()}, {"hidden_act", hf_activation_name(c.activation)},
          {"max_position_embeddings", c.max_seq_len + c.position_offset}, {"type_vocab_size", c.type_vocab_size},
          {"layer_norm_eps", c.norm_eps}, {"hidden_dropout_prob", c.dropout},
          {"attention_probs_dropout_prob", c.dropout}, {"position_embedding_type", "absolute"},
          {"initializer_range", 0.02}};
}

void bert_encoder_rules(RuleList& r, const ModelConfig& c, const std::string& lmzoo, const std::string& hf) {
  const std::string e = hf + "embeddings.";
  r.tensor(lmzoo + "word_embeddings.weight", e + "word_embeddings.weight");
  r.tensor(lmzoo + "position_embeddings.weight", e + "position_embeddings.weight");
  r.tensor(lmzoo + "token_type_embeddings.weight", e + "token_type_embeddings.weight");
  r.norm(lmzoo + "emb_ln", e + "LayerNorm");
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string l = lmzoo + "h." + std::to_string(i) + ".", h = hf + "encoder.layer." + std::to_string(i) + ".";
    r.fused(l + "attn.c_attn", {h + "attention.self.query", h + "attention.self.key", h + "attention.self.value"},
            {c.attn_dim(), c.kv_dim(), c.kv_dim()});
    r.linear(l + "attn.c_proj", h + "attention.output.dense");
    r.norm(l + "ln_1", h + "attention.output.LayerNorm");
    r.linear(l + "mlp.c_fc", h + "intermediate.dense");
    r.linear(l + "mlp.c_proj", h + "output.dense");
    r.norm(l + "ln_2", h + "output.LayerNorm");
  }
}

bool bert_family_shape(const ModelConfig& c) {
  if (c.arch != Arch::kBert) return false;
  const std::string bert = "BERT";
  require_twin(c.position == Position::kLearned, c, bert, "learned positions, not " + enum_name(c.position));
  require_twin(c.norm == NormKind::kLayerNorm && c.norm_position == NormPosition::kPost, c, bert,
               "post-norm LayerNorm");
  require_twin(c.bias, c, bert, "biases (--bias)");
  require_twin(!c.gated_ffn(), c, bert, "an ungated activation");
  require_twin(c.kv_heads() == c.n_head, c, bert, "one key/value head per query head");
  return true;
}

std::string with_encoder_prefix(const std::string& name, const std::string& prefix) {
  const bool encoder_part =
      starts_with(name, "embeddings.") || starts_with(name, "encoder.") || starts_with(name, "pooler.");
  return encoder_part ? prefix + name : name;
}

namespace {

// The last bert family asked (after RoBERTa and DistilBERT).
std::optional<HfArchitecture> twin(const ModelConfig& c) {
  if (!bert_family_shape(c)) return std::nullopt;
  require_twin(c.tie_embeddings || !c.labels.empty(), c, "BERT", "a masked-LM decoder tied to the embeddings");
  return c.labels.empty() ? HfArchitecture::kBertForMaskedLM : HfArchitecture::kBertForSequenceClassification;
}

json write(const ModelConfig& c, HfArchitecture, const HfTokenIds&) {
  json j = bert_fields(c);
  if (c.labels.empty()) return j;
  json id2label = json::object(), label2id = json::object();
  for (size_t i = 0; i < c.labels.size(); ++i) {
    id2label[std::to_string(i)] = c.labels[i];
    label2id[c.labels[i]] = i;
  }
  j.update({{"id2label", id2label}, {"label2id", label2id}, {"problem_type", "single_label_classification"}});
  return j;
}

std::vector<HfWeightRule> weights(const ModelConfig& c, HfArchitecture a) {
  RuleList r(true);
  switch (a) {
    case HfArchitecture::kBertForMaskedLM: {
      bert_encoder_rules(r, c, "", "bert.");
      r.tensor("mlm_bias", "cls.predictions.bias");
      r.linear("mlm_dense", "cls.predictions.transform.dense");
      r.norm("mlm_ln", "cls.predictions.transform.LayerNorm");
      if (!c.tie_embeddings) r.tensor("mlm_decoder.weight", "cls.predictions.decoder.weight");
      const size_t pooler = r.size();
      r.linear("pooler", "bert.pooler.dense");  // in checkpoints trained with next-sentence prediction
      r.mark_optional_from(pooler);
      break;
    }
    case HfArchitecture::kBertModel:
      bert_encoder_rules(r, c, "", "");
      r.linear("pooler", "pooler.dense");
      break;
    case HfArchitecture::kBertForSequenceClassification:
      bert_encoder_rules(r, c, "bert.", "bert.");
      r.linear("bert.pooler", "bert.pooler.dense");
      r.linear("classifier", "classifier");
      break;
    default: throw std::logic_error("not a BERT architecture");
  }
  return r.take();
}

std::string canonical_name(HfArchitecture a, const std::string& name) {
  if (a == HfArchitecture::kBertModel) return starts_with(name, "bert.") ? name.substr(5) : name;
  return with_encoder_prefix(name, "bert.");
}

bool ignorable(HfArchitecture a, const ModelConfig& c, const std::string& name) {
  if (starts_with(name, "cls.seq_relationship.")) return true;  // the next-sentence head
  if (!starts_with(name, "cls.")) return false;
  return a != HfArchitecture::kBertForMaskedLM || name == "cls.predictions.decoder.bias" ||
         (c.tie_embeddings && name == "cls.predictions.decoder.weight");
}

}  // namespace

const HfFamily& bert_family() {
  static const HfFamily family{"bert",
                               {HfArchitecture::kBertForMaskedLM, HfArchitecture::kBertModel,
                                HfArchitecture::kBertForSequenceClassification},
                               read_bert_config,
                               twin,
                               write,
                               weights,
                               canonical_name,
                               ignorable};
  return family;
}

}  // namespace lmzoo::hf
