// Llama (LlamaForCausalLM, also SmolLM2 and TinyLlama): RoPE, pre-norm RMSNorm, SwiGLU, grouped-query attention.
#include "models/hf/llama.h"

#include "models/hf/family.h"
#include "models/hf/rule_list.h"

namespace lmzoo::hf {

void read_llama_config(const HfFields& f, HfModelDescription& d) {
  ModelConfig& c = d.config;
  c.arch = Arch::kGpt;
  c.vocab_size = f.integer("vocab_size");
  c.d_model = f.integer("hidden_size");
  c.d_ff = f.integer("intermediate_size");
  c.n_layer = f.integer("num_hidden_layers");
  c.n_head = f.integer("num_attention_heads");
  c.n_kv_heads = f.integer("num_key_value_heads", c.n_head);
  c.max_seq_len = f.integer("max_position_embeddings");
  c.norm_eps = f.number("rms_norm_eps", 1e-6);
  c.rope_base = agreed_rope_setting(f, {"rope_theta"}, "rope_theta", 10000.0);
  c.dropout = f.number("attention_dropout", 0.0);
  c.tie_embeddings = f.boolean("tie_word_embeddings", false);
  c.norm = NormKind::kRmsNorm;
  c.norm_position = NormPosition::kPre;
  c.position = Position::kRope;
  c.init = InitScheme::kGpt2;
  if (activation_of("hidden_act", f.text("hidden_act", "silu")) != Activation::kSilu) {
    throw HfFormatError("config.json: hidden_act '" + f.text("hidden_act", "") + "' is not supported (silu)");
  }
  c.activation = Activation::kSwiglu;
  const bool attention_bias = f.boolean("attention_bias", false);
  const bool mlp_bias = f.boolean("mlp_bias", false);
  if (attention_bias != mlp_bias) {
    throw HfFormatError("config.json: attention_bias and mlp_bias differ (lmzoo has biases everywhere or nowhere)");
  }
  c.bias = attention_bias;
  if (f.has("head_dim") && f.integer("head_dim") * c.n_head != c.d_model) {
    throw HfFormatError("config.json: head_dim " + std::to_string(f.integer("head_dim")) +
                        " is not supported (lmzoo's Llama heads are hidden_size / num_attention_heads = " +
                        std::to_string(c.d_model / c.n_head) + ")");
  }
  const double rotary = agreed_rope_setting(f, {"partial_rotary_factor"}, "partial_rotary_factor", 1.0);
  if (rotary != 1.0) {  // transformers 4.48 honours it for Llama-style classes
    throw HfFormatError("config.json: partial_rotary_factor " + literal_number(rotary) +
                        " is not supported for this class (lmzoo's Llama rotates whole heads)");
  }
  if (f.integer("pretraining_tp", 1) != 1) {
    d.notes.push_back("pretraining_tp " + std::to_string(f.integer("pretraining_tp", 1)) +
                      " ignored: it only splits the same matrix products");
  }
}

json llama_fields(const ModelConfig& c) {
  return {{"hidden_size", c.d_model}, {"intermediate_size", c.ff_dim()}, {"num_hidden_layers", c.n_layer},
          {"num_attention_heads", c.n_head}, {"num_key_value_heads", c.kv_heads()},
          {"head_dim", c.head_size()}, {"max_position_embeddings", c.max_seq_len},
          {"rms_norm_eps", c.norm_eps}, {"rope_theta", c.rope_base}, {"rope_scaling", nullptr},
          {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", c.rope_base}}},  // 5.x reads this
          {"hidden_act", "silu"}, {"attention_dropout", c.dropout}, {"initializer_range", 0.02}};
}

std::vector<HfWeightRule> llama_weights(const ModelConfig& c, HfArchitecture) {
  RuleList r(c.bias);
  r.tensor("wte.weight", "model.embed_tokens.weight");
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string l = "h." + std::to_string(i) + ".", hf = "model.layers." + std::to_string(i) + ".";
    r.norm_without_bias(l + "ln_1", hf + "input_layernorm");
    r.fused(l + "attn.c_attn", {hf + "self_attn.q_proj", hf + "self_attn.k_proj", hf + "self_attn.v_proj"},
            {c.attn_dim(), c.kv_dim(), c.kv_dim()}, c.qkv_bias);
    r.linear(l + "attn.c_proj", hf + "self_attn.o_proj");
    r.norm_without_bias(l + "ln_2", hf + "post_attention_layernorm");
    r.linear(l + "mlp.c_fc", hf + "mlp.gate_proj");
    r.linear(l + "mlp.c_fc_lin", hf + "mlp.up_proj");
    r.linear(l + "mlp.c_proj", hf + "mlp.down_proj");
  }
  r.norm_without_bias("ln_f", "model.norm");
  if (!c.tie_embeddings) r.tensor("lm_head.weight", "lm_head.weight");
  return r.take();
}

bool llama_family_shape(const ModelConfig& c, const std::string& family) {
  if (c.arch != Arch::kGpt || c.position != Position::kRope) return false;
  require_twin(c.rope_fraction == 1.0, c, family,
               "rope over whole heads (GPT-NeoX rotates part of each, but with LayerNorm and an ungated activation)");
  require_twin(c.norm == NormKind::kRmsNorm && c.norm_position == NormPosition::kPre && c.final_norm, c, family,
               "pre-norm RMSNorm with a final norm");
  require_twin(c.activation == Activation::kSwiglu, c, family, "activation swiglu");
  return true;
}

std::string llama_canonical_name(HfArchitecture, const std::string& name) {
  const bool prefixed = starts_with(name, "model.") || starts_with(name, "lm_head.");
  return prefixed ? name : "model." + name;  // LlamaModel's own files lack the prefix
}

bool llama_ignorable(HfArchitecture, const ModelConfig& c, const std::string& name) {
  return c.tie_embeddings && name == "lm_head.weight";
}

namespace {

// The last of Llama's kin asked: a rope decoder Qwen2 and Mistral did not claim.
std::optional<HfArchitecture> twin(const ModelConfig& c) {
  if (!llama_family_shape(c, "Llama")) return std::nullopt;
  return HfArchitecture::kLlamaForCausalLM;
}

json write(const ModelConfig& c, HfArchitecture, const HfTokenIds&) {
  json j = llama_fields(c);
  j.update({{"attention_bias", c.bias}, {"mlp_bias", c.bias}});
  return j;
}

}  // namespace

const HfFamily& llama_family() {
  static const HfFamily family{"llama", {HfArchitecture::kLlamaForCausalLM}, read_llama_config, twin, write,
                               llama_weights, llama_canonical_name, llama_ignorable};
  return family;
}

}  // namespace lmzoo::hf
