// DistilBERT (DistilBertForMaskedLM): BERT without token types, LayerNorm eps fixed at 1e-12, its own names.
#include "models/hf/bert.h"
#include "models/hf/family.h"

namespace lmzoo::hf {
namespace {

void read(const HfFields& f, HfModelDescription& d) {
  ModelConfig& c = d.config;
  c.arch = Arch::kBert;
  c.vocab_size = f.integer("vocab_size");
  c.d_model = f.integer("dim");
  c.n_layer = f.integer("n_layers");
  c.n_head = f.integer("n_heads");
  c.d_ff = f.integer("hidden_dim");
  c.max_seq_len = f.integer("max_position_embeddings");
  c.type_vocab_size = 0;
  c.activation = activation_of("activation", f.text("activation", "gelu"));
  c.norm_eps = 1e-12;
  c.dropout = merged_dropout(f, {"dropout", "attention_dropout"}, d.notes);
  c.bias = true;
  c.norm = NormKind::kLayerNorm;
  c.norm_position = NormPosition::kPost;
  c.position = Position::kLearned;
  c.tie_embeddings = f.boolean("tie_word_embeddings", true);  // tie_weights_ is a leftover transformers ignores
  c.init = InitScheme::kBert;
  f.require_bool("sinusoidal_pos_embds", false, false);
}

// Claims a BERT-family encoder without token types.
std::optional<HfArchitecture> twin(const ModelConfig& c) {
  if (!bert_family_shape(c) || c.type_vocab_size != 0) return std::nullopt;
  const std::string distilbert = "DistilBERT";
  require_twin(c.position_offset == 0, c, distilbert, "positions from 0 (position_offset is RoBERTa's)");
  require_twin(c.labels.empty(), c, distilbert,
               "its own classification head (pre_classifier + ReLU), not lmzoo's pooler + classifier");
  require_twin(c.norm_eps == 1e-12, c, distilbert, "LayerNorm eps 1e-12 (fixed in its code)");
  return HfArchitecture::kDistilBertForMaskedLM;
}

json write(const ModelConfig& c, HfArchitecture, const HfTokenIds&) {
  return {{"dim", c.d_model}, {"n_layers", c.n_layer}, {"n_heads", c.n_head}, {"hidden_dim", c.ff_dim()},
          {"activation", hf_activation_name(c.activation)}, {"max_position_embeddings", c.max_seq_len},
          {"dropout", c.dropout}, {"attention_dropout", c.dropout}, {"sinusoidal_pos_embds", false},
          {"tie_weights_", c.tie_embeddings}, {"initializer_range", 0.02}};
}

// distilbert.embeddings (no token types), distilbert.transformer.layer.N with q/k/v_lin fused into c_attn,
// vocab_transform / vocab_layer_norm / vocab_projector (weight tied unless untied, bias).
std::vector<HfWeightRule> weights(const ModelConfig& c, HfArchitecture) {
  RuleList r(true);
  const std::string e = "distilbert.embeddings.";
  r.tensor("word_embeddings.weight", e + "word_embeddings.weight");
  r.tensor("position_embeddings.weight", e + "position_embeddings.weight");
  r.norm("emb_ln", e + "LayerNorm");
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string l = "h." + std::to_string(i) + ".", h = "distilbert.transformer.layer." + std::to_string(i) + ".";
    r.fused(l + "attn.c_attn", {h + "attention.q_lin", h + "attention.k_lin", h + "attention.v_lin"},
            {c.attn_dim(), c.kv_dim(), c.kv_dim()});
    r.linear(l + "attn.c_proj", h + "attention.out_lin");
    r.norm(l + "ln_1", h + "sa_layer_norm");
    r.linear(l + "mlp.c_fc", h + "ffn.lin1");
    r.linear(l + "mlp.c_proj", h + "ffn.lin2");
    r.norm(l + "ln_2", h + "output_layer_norm");
  }
  r.linear("mlm_dense", "vocab_transform");
  r.norm("mlm_ln", "vocab_layer_norm");
  r.tensor("mlm_bias", "vocab_projector.bias");
  if (!c.tie_embeddings) r.tensor("mlm_decoder.weight", "vocab_projector.weight");
  return r.take();
}

std::string canonical_name(HfArchitecture, const std::string& name) {
  const bool base_part = starts_with(name, "embeddings.") || starts_with(name, "transformer.");
  return base_part ? "distilbert." + name : name;
}

bool ignorable(HfArchitecture, const ModelConfig& c, const std::string& name) {
  return c.tie_embeddings && name == "vocab_projector.weight";
}

}  // namespace

const HfFamily& distilbert_family() {
  static const HfFamily family{"distilbert", {HfArchitecture::kDistilBertForMaskedLM}, read, twin, write, weights,
                               canonical_name, ignorable};
  return family;
}

}  // namespace lmzoo::hf
