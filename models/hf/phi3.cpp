// Phi-3 / Phi-3.5 (Phi3ForCausalLM): Llama's math with q/k/v fused in qkv_proj and gate/up in gate_up_proj, an optional
// sliding window (Mistral's), no biases. Imported; lmzoo writes the same model back as Llama or Mistral (equal logits).
#include "models/hf/family.h"
#include "models/hf/llama.h"
#include "models/hf/rule_list.h"

namespace lmzoo::hf {
namespace {

// Llama's fields with Phi-3's defaults (rms_norm_eps 1e-5) and dropouts (resid_pdrop, embd_pdrop, attention_dropout);
// rope over whole heads only (5.x's partial_rotary_factor; Phi-4-mini's 0.75 is refused), no rope scaling (longrope
// is refused), no biases whatever attention_bias says (Phi-3's layers have none).
void read(const HfFields& f, HfModelDescription& d) {
  read_llama_config(f, d);
  ModelConfig& c = d.config;
  c.bias = false;
  c.norm_eps = f.number("rms_norm_eps", 1e-5);
  c.dropout = merged_dropout(f, {"resid_pdrop", "embd_pdrop", "attention_dropout"}, d.notes, 0.0);
  if (f.has("sliding_window")) {
    c.attention_window = f.integer("sliding_window");
    if (c.attention_window < 1) throw HfFormatError("config.json: sliding_window must be positive or null");
  }
}

// Never claims a model: a Llama-shaped lmzoo model is written as Llama (or Mistral with a window), which compute the
// same logits; Phi-3's fused names are read only.
std::optional<HfArchitecture> twin(const ModelConfig&) { return std::nullopt; }

json write(const ModelConfig& c, HfArchitecture, const HfTokenIds&) {
  json j = llama_fields(c);
  j.erase("head_dim");
  j.update({{"sliding_window", c.attention_window > 0 ? json(c.attention_window) : json(nullptr)},
            {"resid_pdrop", c.dropout}, {"embd_pdrop", c.dropout},
            {"original_max_position_embeddings", c.max_seq_len}});
  return j;
}

// model.layers.N.self_attn.qkv_proj = lmzoo's fused c_attn ([q; k; v] rows); mlp.gate_up_proj = [c_fc; c_fc_lin].
std::vector<HfWeightRule> weights(const ModelConfig& c, HfArchitecture) {
  RuleList r(false);
  r.tensor("wte.weight", "model.embed_tokens.weight");
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string l = "h." + std::to_string(i) + ".", hf = "model.layers." + std::to_string(i) + ".";
    r.norm_without_bias(l + "ln_1", hf + "input_layernorm");
    r.linear(l + "attn.c_attn", hf + "self_attn.qkv_proj");
    r.linear(l + "attn.c_proj", hf + "self_attn.o_proj");
    r.norm_without_bias(l + "ln_2", hf + "post_attention_layernorm");
    r.split({l + "mlp.c_fc", l + "mlp.c_fc_lin"}, hf + "mlp.gate_up_proj", {c.ff_dim(), c.ff_dim()});
    r.linear(l + "mlp.c_proj", hf + "mlp.down_proj");
  }
  r.norm_without_bias("ln_f", "model.norm");
  if (!c.tie_embeddings) r.tensor("lm_head.weight", "lm_head.weight");
  return r.take();
}

}  // namespace

const HfFamily& phi3_family() {
  static const HfFamily family{"phi3", {HfArchitecture::kPhi3ForCausalLM}, read, twin, write, weights,
                               llama_canonical_name, llama_ignorable};
  return family;
}

}  // namespace lmzoo::hf
