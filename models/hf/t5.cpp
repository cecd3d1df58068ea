// T5 (T5ForConditionalGeneration, v1.0 and v1.1): relative position buckets, RMSNorm without biases, an
// encoder-decoder whose output is scaled before a tied head.
#include "models/hf/family.h"
#include "models/hf/rule_list.h"

namespace lmzoo::hf {
namespace {

// T5's feed_forward_proj: "relu", "gelu", ... or gated, "gated-gelu" (v1.1: HF turns it into gelu_new), "gated-silu".
Activation t5_activation(const std::string& proj) {
  const bool gated = proj.rfind("gated-", 0) == 0;
  if (!gated) return activation_of("feed_forward_proj", proj);
  const std::string inner = proj.substr(6);
  if (inner == "gelu" || activation_of("feed_forward_proj", inner) == Activation::kGeluTanh) return Activation::kGeglu;
  if (activation_of("feed_forward_proj", inner) == Activation::kSilu) return Activation::kSwiglu;
  throw HfFormatError("config.json: feed_forward_proj '" + proj +
                      "' is not supported (relu, gelu, gelu_new, gated-gelu, gated-silu)");
}

// T5's decoder output is scaled by d_model^-0.5 before a tied head. transformers 4.x scales exactly when
// tie_word_embeddings (default true); 5.x reads scale_decoder_outputs (default: tie_word_embeddings is not false)
// and always ties, so it saves v1.1 as tied, unscaled and without lm_head.weight. lmzoo scales exactly when tied:
// tied and unscaled becomes untied with lm_head copied from shared (the same logits); scaled and untied has no form.
void read_head(const HfFields& f, HfModelDescription& d) {
  const bool tied = f.boolean("tie_word_embeddings", true);
  const bool scaled = f.boolean("scale_decoder_outputs", tied);
  if (scaled && !tied) {
    throw HfFormatError("config.json: scale_decoder_outputs true with tie_word_embeddings false: a T5 whose decoder "
                        "output is scaled before an untied head is not supported (lmzoo scales exactly when tied)");
  }
  d.config.tie_embeddings = scaled;
  d.lm_head_from_shared = tied && !scaled;
  if (d.lm_head_from_shared) {
    d.notes.push_back("scale_decoder_outputs false with tied embeddings (transformers 5's T5 v1.1): imported untied, "
                      "lm_head.weight copied from shared.weight");
  }
}

void read(const HfFields& f, HfModelDescription& d) {
  ModelConfig& c = d.config;
  c.arch = Arch::kT5;
  c.vocab_size = f.integer("vocab_size");
  c.d_model = f.integer("d_model");
  c.head_dim = f.integer("d_kv");
  c.d_ff = f.integer("d_ff");
  c.n_layer = f.integer("num_layers");
  c.n_decoder_layer = f.integer("num_decoder_layers", c.n_layer);
  c.n_head = f.integer("num_heads");
  c.relative_buckets = f.integer("relative_attention_num_buckets", 32);
  c.relative_max_distance = f.integer("relative_attention_max_distance", 128);
  c.max_seq_len = f.integer("n_positions", 512);
  c.dropout = f.number("dropout_rate", 0.1);
  c.norm_eps = f.number("layer_norm_epsilon", 1e-6);
  c.activation = t5_activation(f.text("feed_forward_proj", "relu"));
  c.bias = false;
  c.norm = NormKind::kRmsNorm;
  c.norm_position = NormPosition::kPre;
  c.position = Position::kRelative;
  c.init = InitScheme::kT5;
  f.require_bool("is_encoder_decoder", true, true);
  read_head(f, d);
}

std::optional<HfArchitecture> twin(const ModelConfig& c) {
  if (c.arch != Arch::kT5) return std::nullopt;
  const std::string t5 = "T5";
  require_twin(c.position == Position::kRelative, c, t5, "relative positions, not " + enum_name(c.position));
  require_twin(c.norm == NormKind::kRmsNorm && c.norm_position == NormPosition::kPre && c.final_norm, c, t5,
               "pre-norm RMSNorm with final norms");
  require_twin(!c.bias, c, t5, "no biases");
  require_twin(c.kv_heads() == c.n_head, c, t5, "one key/value head per query head");
  require_twin(c.activation != Activation::kGeluTanh && c.activation != Activation::kSilu, c, t5,
               "relu, gelu, geglu or swiglu");
  return HfArchitecture::kT5ForConditionalGeneration;
}

json write(const ModelConfig& c, HfArchitecture, const HfTokenIds& ids) {
  std::string proj = hf_activation_name(c.activation);
  if (c.gated_ffn()) proj = c.activation == Activation::kGeglu ? "gated-gelu" : "gated-silu";
  return {{"d_model", c.d_model}, {"d_kv", c.head_size()}, {"d_ff", c.ff_dim()}, {"num_layers", c.n_layer},
          {"num_decoder_layers", c.decoder_layers()}, {"num_heads", c.n_head},
          {"relative_attention_num_buckets", c.relative_buckets},
          {"relative_attention_max_distance", c.relative_max_distance}, {"dropout_rate", c.dropout},
          {"layer_norm_epsilon", c.norm_eps}, {"feed_forward_proj", proj}, {"is_encoder_decoder", true},
          {"n_positions", c.max_seq_len}, {"decoder_start_token_id", ids.pad >= 0 ? ids.pad : 0},
          {"initializer_factor", 1.0},
          // 5.x reads this (4.x scales when tied): an untied, unscaled model is read as such by both, 5.x tying
          // lm_head to shared
          {"scale_decoder_outputs", c.tie_embeddings}};
}

void feed_forward_rules(RuleList& r, const ModelConfig& c, const std::string& l, const std::string& ff) {
  if (c.gated_ffn()) {
    r.linear(l + "mlp.c_fc", ff + "wi_0");
    r.linear(l + "mlp.c_fc_lin", ff + "wi_1");
  } else {
    r.linear(l + "mlp.c_fc", ff + "wi");
  }
  r.linear(l + "mlp.c_proj", ff + "wo");
}

std::vector<HfWeightRule> weights(const ModelConfig& c, HfArchitecture) {
  RuleList r(false);
  r.tensor("shared.weight", "shared.weight");
  const std::vector<int64_t> qkv = {c.attn_dim(), c.kv_dim(), c.kv_dim()};
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string l = "encoder.h." + std::to_string(i) + ".", b = "encoder.block." + std::to_string(i) + ".";
    const std::string att = b + "layer.0.SelfAttention.";
    r.fused(l + "attn.c_attn", {att + "q", att + "k", att + "v"}, qkv);
    r.linear(l + "attn.c_proj", att + "o");
    if (i == 0) r.tensor("encoder.rel_bias.weight", att + "relative_attention_bias.weight");
    r.norm_without_bias(l + "ln_1", b + "layer.0.layer_norm");
    feed_forward_rules(r, c, l, b + "layer.1.DenseReluDense.");
    r.norm_without_bias(l + "ln_2", b + "layer.1.layer_norm");
  }
  r.norm_without_bias("encoder.ln_f", "encoder.final_layer_norm");
  for (int64_t i = 0; i < c.decoder_layers(); ++i) {
    const std::string l = "decoder.h." + std::to_string(i) + ".", b = "decoder.block." + std::to_string(i) + ".";
    const std::string att = b + "layer.0.SelfAttention.", cross = b + "layer.1.EncDecAttention.";
    r.fused(l + "attn.c_attn", {att + "q", att + "k", att + "v"}, qkv);
    r.linear(l + "attn.c_proj", att + "o");
    if (i == 0) r.tensor("decoder.rel_bias.weight", att + "relative_attention_bias.weight");
    r.norm_without_bias(l + "ln_1", b + "layer.0.layer_norm");
    r.linear(l + "cross_attn.c_q", cross + "q");
    r.fused(l + "cross_attn.c_kv", {cross + "k", cross + "v"}, {c.kv_dim(), c.kv_dim()});
    r.linear(l + "cross_attn.c_proj", cross + "o");
    r.norm_without_bias(l + "ln_2", b + "layer.1.layer_norm");
    feed_forward_rules(r, c, l, b + "layer.2.DenseReluDense.");
    r.norm_without_bias(l + "ln_3", b + "layer.2.layer_norm");
  }
  r.norm_without_bias("decoder.ln_f", "decoder.final_layer_norm");
  if (!c.tie_embeddings) r.tensor("lm_head.weight", "lm_head.weight");
  return r.take();
}

std::string canonical_name(HfArchitecture, const std::string& name) { return name; }

bool ignorable(HfArchitecture, const ModelConfig& c, const std::string& name) {
  return name == "encoder.embed_tokens.weight" || name == "decoder.embed_tokens.weight" ||  // = shared
         (c.tie_embeddings && name == "lm_head.weight");
}

}  // namespace

const HfFamily& t5_family() {
  // Files saved from the bare encoder or decoder name the shared embedding after it.
  static const HfFamily family{"t5",     {HfArchitecture::kT5ForConditionalGeneration},
                               read,     twin,
                               write,    weights,
                               canonical_name, ignorable,
                               {{"shared.weight", "encoder.embed_tokens.weight"},
                                {"shared.weight", "decoder.embed_tokens.weight"}}};
  return family;
}

}  // namespace lmzoo::hf
