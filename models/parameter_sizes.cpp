// Parameter names and sizes per family, following the modules' constructors (gpt.cpp, bert.cpp, bert_classifier.cpp,
// t5.cpp, blocks.cpp, layers/); tests compare them with built models. Leaves out buffers (rope and alibi tables).
#include "models/parameter_sizes.h"

#include <algorithm>
#include <stdexcept>

#include "models/layers/positions.h"

namespace lmzoo {

namespace {

class SizeList {
 public:
  explicit SizeList(const ModelConfig& c) : c_(c) {}
  void add(const std::string& name, int64_t elements, bool projection = false) {
    out_.push_back({name, elements, projection});
  }
  // A linear layer IN -> OUT: its weight (a projection when PROJECTION) and bias.
  void linear(const std::string& prefix, int64_t in, int64_t out, bool bias, bool projection = false) {
    add(prefix + ".weight", in * out, projection);
    if (bias) add(prefix + ".bias", out);
  }
  void norm(const std::string& prefix) {
    add(prefix + ".weight", c_.d_model);
    if (c_.norm == NormKind::kLayerNorm && c_.bias) add(prefix + ".bias", c_.d_model);
  }
  void self_attention(const std::string& prefix) {
    linear(prefix + ".c_attn", c_.d_model, c_.attn_dim() + 2 * c_.kv_dim(), c_.bias || c_.qkv_bias, true);
    linear(prefix + ".c_proj", c_.attn_dim(), c_.d_model, c_.bias, true);
  }
  void cross_attention(const std::string& prefix) {
    linear(prefix + ".c_q", c_.d_model, c_.attn_dim(), c_.bias, true);
    linear(prefix + ".c_kv", c_.d_model, 2 * c_.kv_dim(), c_.bias, true);
    linear(prefix + ".c_proj", c_.attn_dim(), c_.d_model, c_.bias, true);
  }
  void feed_forward(const std::string& prefix) {
    linear(prefix + ".c_fc", c_.d_model, c_.ff_dim(), c_.bias, true);
    if (c_.gated_ffn()) linear(prefix + ".c_fc_lin", c_.d_model, c_.ff_dim(), c_.bias, true);
    linear(prefix + ".c_proj", c_.ff_dim(), c_.d_model, c_.bias, true);
  }
  // TransformerBlock: ln_1, attn, ln_2, mlp.
  void block(const std::string& prefix) {
    norm(prefix + ".ln_1");
    self_attention(prefix + ".attn");
    norm(prefix + ".ln_2");
    feed_forward(prefix + ".mlp");
  }
  // DecoderBlock: ln_1, attn, ln_2, cross_attn, ln_3, mlp.
  void decoder_block(const std::string& prefix) {
    norm(prefix + ".ln_1");
    self_attention(prefix + ".attn");
    norm(prefix + ".ln_2");
    cross_attention(prefix + ".cross_attn");
    norm(prefix + ".ln_3");
    feed_forward(prefix + ".mlp");
  }
  // AttentionBias: a relative table holds the only parameter.
  void attention_bias(const std::string& prefix) {
    if (c_.position == Position::kRelative) add(prefix + ".rel_bias.weight", c_.relative_buckets * c_.n_head);
  }
  std::vector<NamedSize> take() { return std::move(out_); }

 private:
  const ModelConfig& c_;
  std::vector<NamedSize> out_;
};

void gpt_sizes(const ModelConfig& c, SizeList& s) {
  const PositionScheme positions = position_scheme(c.position);
  s.add("wte.weight", c.padded_vocab() * c.d_model);
  if (positions.learned_table) s.add("wpe.weight", c.max_seq_len * c.d_model);
  if (positions.score_bias) s.attention_bias("attn_bias");
  for (int64_t i = 0; i < c.n_layer; ++i) s.block("h." + std::to_string(i));
  if (c.final_norm) s.norm("ln_f");
  if (!c.tie_embeddings) s.add("lm_head.weight", c.padded_vocab() * c.d_model);
}

void bert_sizes(const ModelConfig& c, SizeList& s, const std::string& p) {
  const PositionScheme positions = position_scheme(c.position);
  const int64_t d = c.d_model;
  s.add(p + "word_embeddings.weight", c.padded_vocab() * d);
  if (positions.learned_table) s.add(p + "position_embeddings.weight", (c.max_seq_len + c.position_offset) * d);
  if (positions.score_bias) s.attention_bias(p + "attn_bias");
  if (c.type_vocab_size > 0) s.add(p + "token_type_embeddings.weight", c.type_vocab_size * d);
  s.norm(p + "emb_ln");
  for (int64_t i = 0; i < c.n_layer; ++i) s.block(p + "h." + std::to_string(i));
  if (c.norm_position == NormPosition::kPre && c.final_norm) s.norm(p + "ln_f");
  s.linear(p + "mlm_dense", d, d, c.bias);
  s.norm(p + "mlm_ln");
  if (!c.tie_embeddings) s.add(p + "mlm_decoder.weight", c.padded_vocab() * d);
  s.add(p + "mlm_bias", c.padded_vocab());
  s.linear(p + "pooler", d, d, c.bias);
  if (!c.labels.empty()) s.linear("classifier", d, int64_t(c.labels.size()), true);
}

void t5_stack_sizes(const ModelConfig& c, SizeList& s, const std::string& p, bool decoder) {
  const PositionScheme positions = position_scheme(c.position);
  const int64_t layers = decoder ? c.decoder_layers() : c.n_layer;
  for (int64_t i = 0; i < layers; ++i) {
    if (decoder) {
      s.decoder_block(p + "h." + std::to_string(i));
    } else {
      s.block(p + "h." + std::to_string(i));
    }
  }
  if (positions.score_bias && c.position == Position::kRelative) {
    s.add(p + "rel_bias.weight", c.relative_buckets * c.n_head);
  } else if (positions.score_bias) {
    s.attention_bias(p + "attn_bias");
  }
  if (positions.learned_table) s.add(p + "wpe.weight", c.max_seq_len * c.d_model);
  if (c.final_norm) s.norm(p + "ln_f");
}

void t5_sizes(const ModelConfig& c, SizeList& s) {
  s.add("shared.weight", c.padded_vocab() * c.d_model);
  t5_stack_sizes(c, s, "encoder.", false);
  t5_stack_sizes(c, s, "decoder.", true);
  if (!c.tie_embeddings) s.add("lm_head.weight", c.padded_vocab() * c.d_model);
}

}  // namespace

std::vector<NamedSize> parameter_sizes(const ModelConfig& config) {
  SizeList sizes(config);
  switch (config.arch) {
    case Arch::kGpt: gpt_sizes(config, sizes); break;
    case Arch::kBert: bert_sizes(config, sizes, config.labels.empty() ? "" : "bert."); break;
    case Arch::kT5: t5_sizes(config, sizes); break;
  }
  return sizes.take();
}

int64_t elements_named(const std::vector<NamedSize>& sizes, const std::vector<std::string>& parts) {
  int64_t total = 0;
  for (const auto& s : sizes) {
    for (const auto& part : parts) {
      if (!part.empty() && s.name.find(part) != std::string::npos) {
        total += s.elements;
        break;
      }
    }
  }
  return total;
}

namespace {

std::vector<std::string> part_modules(ParameterPart part) {
  switch (part) {
    case ParameterPart::kPositionTable: return {"wpe", "position_embeddings"};
    case ParameterPart::kPooler: return {"pooler"};
    case ParameterPart::kMlmHead: return {"mlm_dense", "mlm_ln", "mlm_decoder", "mlm_bias"};
  }
  throw std::logic_error("parameter part outside its table");
}

// Whether one of NAME's dot-separated components is COMPONENT ("bert.pooler.weight" has "pooler").
bool has_component(const std::string& name, const std::string& component) {
  for (size_t start = 0; start <= name.size();) {
    const size_t end = std::min(name.find('.', start), name.size());
    if (name.compare(start, end - start, component) == 0) return true;
    start = end + 1;
  }
  return false;
}

bool in_any_part(const std::string& name, const std::vector<ParameterPart>& parts) {
  for (ParameterPart part : parts) {
    if (in_part(name, part)) return true;
  }
  return false;
}

}  // namespace

bool in_part(const std::string& name, ParameterPart part) {
  for (const auto& module : part_modules(part)) {
    if (has_component(name, module)) return true;
  }
  return false;
}

int64_t parameter_count(const ModelConfig& config, const std::vector<ParameterPart>& excluded) {
  int64_t total = 0;
  for (const auto& s : parameter_sizes(config)) {
    if (!in_any_part(s.name, excluded)) total += s.elements;
  }
  return total;
}

}  // namespace lmzoo
