// GPT-2 (GPT2LMHeadModel): learned positions, pre-norm LayerNorm, Conv1D weights stored [in, out], a tied head.
#include "models/hf/family.h"
#include "models/hf/rule_list.h"

namespace lmzoo::hf {
namespace {

void read(const HfFields& f, HfModelDescription& d) {
  ModelConfig& c = d.config;
  c.arch = Arch::kGpt;
  c.vocab_size = f.integer("vocab_size");
  c.max_seq_len = f.integer("n_positions");
  c.d_model = f.integer("n_embd");
  c.n_layer = f.integer("n_layer");
  c.n_head = f.integer("n_head");
  c.d_ff = f.integer("n_inner", 4 * c.d_model);
  c.activation = activation_of("activation_function", f.text("activation_function", "gelu_new"));
  c.norm_eps = f.number("layer_norm_epsilon", 1e-5);
  c.dropout = merged_dropout(f, {"resid_pdrop", "embd_pdrop", "attn_pdrop"}, d.notes);
  c.bias = true;
  c.norm = NormKind::kLayerNorm;
  c.norm_position = NormPosition::kPre;
  c.position = Position::kLearned;
  c.tie_embeddings = f.boolean("tie_word_embeddings", true);
  c.init = InitScheme::kGpt2;
  f.require_bool("scale_attn_weights", true, true);
  f.require_bool("scale_attn_by_inverse_layer_idx", false, false);
  f.require_bool("add_cross_attention", false, false);
}

// The last gpt family asked: every gpt the others did not claim is GPT-2's or has no twin.
std::optional<HfArchitecture> twin(const ModelConfig& c) {
  if (c.arch != Arch::kGpt) return std::nullopt;
  const std::string gpt2 = "GPT-2";
  require_twin(c.position == Position::kLearned, c, gpt2 + " (or Llama)",
               "learned positions (Llama: rope), not " + enum_name(c.position));
  require_twin(c.norm == NormKind::kLayerNorm && c.norm_position == NormPosition::kPre && c.final_norm, c, gpt2,
               "pre-norm LayerNorm with a final norm");
  require_twin(c.bias, c, gpt2, "biases (--bias)");
  require_twin(!c.gated_ffn(), c, gpt2, "an ungated activation");
  require_twin(c.kv_heads() == c.n_head, c, gpt2, "one key/value head per query head");
  require_twin(c.tie_embeddings, c, gpt2, "tied embeddings");
  require_twin(!c.qkv_bias && !c.parallel_residual && c.attention_window == 0, c, gpt2,
               "no q/k/v-only biases, parallel residuals or attention window");
  return HfArchitecture::kGpt2LMHeadModel;
}

json write(const ModelConfig& c, HfArchitecture, const HfTokenIds&) {
  return {{"n_positions", c.max_seq_len}, {"n_ctx", c.max_seq_len}, {"n_embd", c.d_model},
          {"n_layer", c.n_layer}, {"n_head", c.n_head}, {"n_inner", c.ff_dim()},
          {"activation_function", hf_activation_name(c.activation)}, {"layer_norm_epsilon", c.norm_eps},
          {"resid_pdrop", c.dropout}, {"embd_pdrop", c.dropout}, {"attn_pdrop", c.dropout},
          {"scale_attn_weights", true}, {"initializer_range", 0.02}};
}

std::vector<HfWeightRule> weights(const ModelConfig& c, HfArchitecture) {
  RuleList r(true);
  r.tensor("wte.weight", "transformer.wte.weight");
  r.tensor("wpe.weight", "transformer.wpe.weight");
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string l = "h." + std::to_string(i) + ".", hf = "transformer.h." + std::to_string(i) + ".";
    r.norm(l + "ln_1", hf + "ln_1");
    r.linear(l + "attn.c_attn", hf + "attn.c_attn", HfLayout::kConv1D);
    r.linear(l + "attn.c_proj", hf + "attn.c_proj", HfLayout::kConv1D);
    r.norm(l + "ln_2", hf + "ln_2");
    r.linear(l + "mlp.c_fc", hf + "mlp.c_fc", HfLayout::kConv1D);
    r.linear(l + "mlp.c_proj", hf + "mlp.c_proj", HfLayout::kConv1D);
  }
  r.norm("ln_f", "transformer.ln_f");
  if (!c.tie_embeddings) r.tensor("lm_head.weight", "lm_head.weight");
  return r.take();
}

std::string canonical_name(HfArchitecture, const std::string& name) {
  const bool prefixed = starts_with(name, "transformer.") || starts_with(name, "lm_head.");
  return prefixed ? name : "transformer." + name;  // GPT2Model's own files lack the prefix
}

bool ignorable(HfArchitecture, const ModelConfig& c, const std::string& name) {
  // the causal-mask buffers of old files; the tied head
  return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias") ||
         (c.tie_embeddings && name == "lm_head.weight");
}

}  // namespace

const HfFamily& gpt2_family() {
  static const HfFamily family{"gpt2",  {HfArchitecture::kGpt2LMHeadModel}, read, twin, write, weights,
                               canonical_name, ignorable};
  return family;
}

}  // namespace lmzoo::hf
