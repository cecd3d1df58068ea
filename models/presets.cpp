// Named presets: gpt-nano (nanoGPT's CPU "baby" shape), the GPT-2 family (bias, GELU tanh), and the
// Llama, GPT-NeoX, BERT and T5 presets of their own files; training FLOPs per token of any config.
#include "models/presets.h"

#include <stdexcept>

#include "models/bert_presets.h"
#include "models/gpt_neox_presets.h"
#include "models/llama_presets.h"
#include "models/parameter_sizes.h"
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

int64_t published_parameter_count(const ModelConfig& config) {
  switch (config.arch) {
    case Arch::kBert: return published_bert_parameters(config);
    case Arch::kGpt:
    case Arch::kT5: return parameter_count(config);
  }
  throw std::logic_error("arch outside its table");
}

double model_flops_per_token(const ModelConfig& c) {
  const int64_t layers = c.arch == Arch::kT5 ? c.n_layer + c.decoder_layers() : c.n_layer;
  return 6.0 * double(parameter_count(c, {ParameterPart::kPositionTable})) +
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
