// GPT-NeoX / Pythia (GPTNeoXForCausalLM): parallel or sequential residual, partial rotary, LayerNorm with biases,
// query_key_value interleaved per head, an untied embed_out.
#include "models/hf/family.h"
#include "models/hf/rule_list.h"

#include <cmath>

namespace lmzoo::hf {
namespace {

// The rotary fraction and base as transformers 4.48 spells them (rotary_pct, rotary_emb_base, over any other value
// the file holds), as later 4.x (partial_rotary_factor, rope_theta) and as 5.x (rope_parameters, alone): whichever are
// present must agree. Any rope_scaling other than the default is refused.
void read_rope(const HfFields& f, ModelConfig& c) {
  const double pct = agreed_rope_setting(f, {"rotary_pct", "partial_rotary_factor"}, "partial_rotary_factor", 0.25);
  c.rope_base = agreed_rope_setting(f, {"rotary_emb_base", "rope_theta"}, "rope_theta", 10000.0);
  const int64_t head_size = c.n_head > 0 && c.d_model % c.n_head == 0 ? c.d_model / c.n_head : 0;
  const double rotated = pct * double(head_size);  // HF: rotary_ndims = int(head_size * rotary_pct)
  if (head_size > 0 && !(pct > 0 && pct <= 1 && rotated == std::floor(rotated) && int64_t(rotated) % 2 == 0)) {
    throw HfFormatError("config.json: rotary_pct " + literal_number(pct) + " of head size " +
                        std::to_string(head_size) + " gives " + literal_number(rotated) +
                        " rotated dimensions (lmzoo needs an even whole number, at least 2)");
  }
  c.rope_fraction = pct;
}

void read(const HfFields& f, HfModelDescription& d) {
  ModelConfig& c = d.config;
  c.arch = Arch::kGpt;
  c.vocab_size = f.integer("vocab_size");
  c.d_model = f.integer("hidden_size");
  c.n_layer = f.integer("num_hidden_layers");
  c.n_head = f.integer("num_attention_heads");
  c.d_ff = f.integer("intermediate_size");
  c.max_seq_len = f.integer("max_position_embeddings");
  c.activation = activation_of("hidden_act", f.text("hidden_act", "gelu"));
  c.norm_eps = f.number("layer_norm_eps", 1e-5);
  c.dropout = merged_dropout(f, {"hidden_dropout", "attention_dropout"}, d.notes, 0.0);
  c.tie_embeddings = f.boolean("tie_word_embeddings", false);
  c.parallel_residual = f.boolean("use_parallel_residual", true);
  c.norm = NormKind::kLayerNorm;
  c.norm_position = NormPosition::kPre;
  c.position = Position::kRope;
  c.init = InitScheme::kGpt2;
  // attention_bias false drops only the attention's biases; the feed-forward and the norms keep theirs.
  f.require_bool("attention_bias", true, true);
  c.bias = true;
  f.require_bool("add_cross_attention", false, false);
  read_rope(f, c);
}

// Claims a gpt with a parallel residual, or rope with LayerNorm and an ungated activation (partial rotary or not):
// then rope (all or part of each head), pre-norm LayerNorm with biases, one key/value head per query head.
std::optional<HfArchitecture> twin(const ModelConfig& c) {
  const bool neox_norm = c.norm == NormKind::kLayerNorm && !c.gated_ffn();
  if (c.arch != Arch::kGpt || !(c.parallel_residual || (c.position == Position::kRope && neox_norm))) {
    return std::nullopt;
  }
  const std::string neox = "GPT-NeoX";
  require_twin(c.position == Position::kRope, c, neox, "rope positions, not " + enum_name(c.position));
  require_twin(c.norm == NormKind::kLayerNorm && c.norm_position == NormPosition::kPre && c.final_norm, c, neox,
               "pre-norm LayerNorm with a final norm");
  require_twin(c.bias, c, neox, "biases (--bias)");
  require_twin(!c.gated_ffn(), c, neox, "an ungated activation");
  require_twin(c.kv_heads() == c.n_head, c, neox, "one key/value head per query head");
  require_twin(c.attention_window == 0, c, neox, "attention over the whole context (no --attention-window)");
  return HfArchitecture::kGptNeoXForCausalLM;
}

json write(const ModelConfig& c, HfArchitecture, const HfTokenIds&) {
  return {{"hidden_size", c.d_model}, {"num_hidden_layers", c.n_layer}, {"num_attention_heads", c.n_head},
          {"intermediate_size", c.ff_dim()}, {"hidden_act", hf_activation_name(c.activation)},
          {"rotary_pct", c.rope_fraction}, {"partial_rotary_factor", c.rope_fraction},
          {"rotary_emb_base", c.rope_base}, {"rope_theta", c.rope_base}, {"rope_scaling", nullptr},
          {"rope_parameters",  // transformers 5.x reads only this; 4.48 rotary_pct and rotary_emb_base
           {{"rope_type", "default"}, {"rope_theta", c.rope_base}, {"partial_rotary_factor", c.rope_fraction}}},
          {"max_position_embeddings", c.max_seq_len}, {"layer_norm_eps", c.norm_eps},
          {"use_parallel_residual", c.parallel_residual}, {"attention_bias", true},
          {"hidden_dropout", c.dropout}, {"attention_dropout", c.dropout}, {"initializer_range", 0.02},
          {"use_cache", true}};
}

std::vector<HfWeightRule> weights(const ModelConfig& c, HfArchitecture) {
  RuleList r(true);
  r.tensor("wte.weight", "gpt_neox.embed_in.weight");
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string l = "h." + std::to_string(i) + ".", hf = "gpt_neox.layers." + std::to_string(i) + ".";
    r.norm(l + "ln_1", hf + "input_layernorm");
    r.norm(l + "ln_2", hf + "post_attention_layernorm");
    r.linear(l + "attn.c_attn", hf + "attention.query_key_value", HfLayout::kHeadInterleavedQkv);
    r.linear(l + "attn.c_proj", hf + "attention.dense");
    r.linear(l + "mlp.c_fc", hf + "mlp.dense_h_to_4h");
    r.linear(l + "mlp.c_proj", hf + "mlp.dense_4h_to_h");
  }
  r.norm("ln_f", "gpt_neox.final_layer_norm");
  if (!c.tie_embeddings) r.tensor("lm_head.weight", "embed_out.weight");
  return r.take();
}

std::string canonical_name(HfArchitecture, const std::string& name) {
  const bool prefixed = starts_with(name, "gpt_neox.") || starts_with(name, "embed_out.");
  return prefixed ? name : "gpt_neox." + name;  // GPTNeoXModel's own files lack the prefix
}

bool ignorable(HfArchitecture, const ModelConfig& c, const std::string& name) {
  // the causal-mask buffers of older files; the tied head
  return ends_with(name, ".attention.bias") || ends_with(name, ".attention.masked_bias") ||
         (c.tie_embeddings && (name == "embed_out.weight" || name == "lm_head.weight"));
}

}  // namespace

const HfFamily& gpt_neox_family() {
  static const HfFamily family{"gpt_neox", {HfArchitecture::kGptNeoXForCausalLM}, read, twin, write, weights,
                               canonical_name, ignorable};
  return family;
}

}  // namespace lmzoo::hf
