// Named presets: gpt-nano (nanoGPT's CPU "baby" shape), the GPT-2 family (bias, GELU tanh), and the
// Llama, GPT-NeoX, BERT and T5 presets of their own files; the parameter count of any config.
#include "models/presets.h"

#include <stdexcept>

#include "models/bert_presets.h"
#include "models/gpt_neox_presets.h"
#include "models/layer_parameter_count.h"
#include "models/llama_presets.h"
#include "models/t5_presets.h"

namespace lmzoo {

namespace {
ModelConfig gpt2_shape(int64_t n_layer, int64_t n_head, int64_t d_model) {
  ModelConfig c;
  c.arch = Arch::kGpt;
  c.vocab_size = 50257;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.d_model = d_model;
  c.max_seq_len = 1024;
  c.bias = true;
  c.dropout = 0.0;
  c.activation = Activation::kGeluTanh;
  return c;
}

ModelConfig gpt_nano() {
  ModelConfig c;  // char-level nanoGPT "baby": 4 layers, 4 heads, 128 wide, context 64
  c.n_layer = 4;
  c.n_head = 4;
  c.d_model = 128;
  c.max_seq_len = 64;
  c.bias = false;
  c.dropout = 0.0;
  c.activation = Activation::kGelu;
  return c;
}
}  // namespace

const std::vector<Preset>& all_presets() {
  static const std::vector<Preset> presets = [] {
    std::vector<Preset> all = {
      {"gpt-nano", "nanoGPT CPU baby: 4 layers, 4 heads, d 128, ctx 64, no bias", gpt_nano()},
      {"gpt2", "GPT-2 small: 12 layers, 12 heads, d 768, ctx 1024", gpt2_shape(12, 12, 768), "openai-community/gpt2"},
      {"gpt2-medium", "GPT-2 medium: 24 layers, 16 heads, d 1024", gpt2_shape(24, 16, 1024), "openai-community/gpt2-medium"},
      {"gpt2-large", "GPT-2 large: 36 layers, 20 heads, d 1280", gpt2_shape(36, 20, 1280), "openai-community/gpt2-large"},
      {"gpt2-xl", "GPT-2 XL: 48 layers, 25 heads, d 1600", gpt2_shape(48, 25, 1600), "openai-community/gpt2-xl"},
    };
    for (const auto& p : llama_presets()) all.push_back(p);
    for (const auto& p : gpt_neox_presets()) all.push_back(p);
    for (const auto& p : bert_presets()) all.push_back(p);
    for (const auto& p : t5_presets()) all.push_back(p);
    return all;
  }();
  return presets;
}

const Preset& find_preset(const std::string& name) {
  std::string known;
  for (const auto& p : all_presets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw std::invalid_argument("unknown preset '" + name + "' (known: " + known + ")");
}

namespace {

int64_t count_gpt_parameters(const ModelConfig& c, bool include_position_embeddings) {
  namespace count = parameter_count;
  const int64_t V = c.padded_vocab(), d = c.d_model;
  int64_t total = c.n_layer * (2 * count::norm(c) + count::self_attention(c) + count::feed_forward(c));  // blocks
  if (c.final_norm) total += count::norm(c);                                                         // ln_f
  total += V * d;                                                                                     // wte
  if (!c.tie_embeddings) total += V * d;                                                              // lm_head
  if (c.position != Position::kLearned || include_position_embeddings) total += count::positions(c);
  return total;
}

// A Bert with its pooler and MLM head, or a classifier with its head instead of the MLM head's bias.
int64_t count_bert_model_parameters(const ModelConfig& c, bool include_position_embeddings) {
  const bool drop_table = c.position == Position::kLearned && !include_position_embeddings;
  const int64_t positions = drop_table ? parameter_count::positions(c) : 0;
  const int64_t n_labels = int64_t(c.labels.size());
  const int64_t head = n_labels ? c.d_model * n_labels + n_labels : 0;  // classifier
  return count_bert_parameters(c, /*with_pooler=*/true, /*with_mlm_head=*/true) + head - positions;
}

}  // namespace

int64_t count_parameters(const ModelConfig& c, bool include_position_embeddings) {
  switch (c.arch) {
    case Arch::kGpt: return count_gpt_parameters(c, include_position_embeddings);
    case Arch::kBert: return count_bert_model_parameters(c, include_position_embeddings);
    case Arch::kT5: return count_t5_parameters(c);  // relative bias: no position table
  }
  throw std::logic_error("arch outside its table");
}

double model_flops_per_token(const ModelConfig& c) {
  const int64_t layers = c.arch == Arch::kT5 ? c.n_layer + c.decoder_layers() : c.n_layer;
  return 6.0 * double(count_parameters(c, /*include_position_embeddings=*/false)) +
         12.0 * double(layers) * double(c.d_model) * double(c.max_seq_len);
}

const Preset& default_preset(Arch arch) {
  switch (arch) {
    case Arch::kGpt: return find_preset("gpt-nano");
    case Arch::kBert: return find_preset("bert-tiny");
    case Arch::kT5: return find_preset("t5-small");
  }
  throw std::logic_error("arch outside its table");
}

}  // namespace lmzoo
