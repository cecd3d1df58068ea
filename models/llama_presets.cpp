// Llama-style presets (Touvron et al. 2023, Llama 2; Zhang et al. 2024, TinyLlama; SmolLM2; Qwen2.5; Mistral) as
// gpt-arch configs.
#include "models/llama_presets.h"

namespace lmzoo {

namespace {
ModelConfig llama_shape(int64_t n_layer, int64_t d_model, int64_t n_head, int64_t n_kv_heads, int64_t d_ff,
                        int64_t context) {
  ModelConfig c;
  c.arch = Arch::kGpt;
  c.vocab_size = 32000;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.n_kv_heads = n_kv_heads;
  c.d_model = d_model;
  c.d_ff = d_ff;
  c.max_seq_len = context;
  c.dropout = 0.0;
  c.bias = false;
  c.tie_embeddings = false;
  c.norm = NormKind::kRmsNorm;
  c.norm_position = NormPosition::kPre;
  c.norm_eps = 1e-5;
  c.activation = Activation::kSwiglu;
  c.position = Position::kRope;
  c.rope_base = 10000.0;
  c.init = InitScheme::kGpt2;
  return c;
}

// SmolLM2 (Allal et al. 2025): Llama shapes with tied embeddings, a 49152-token vocabulary and rope base 1e5.
ModelConfig smollm2_shape(int64_t n_layer, int64_t d_model, int64_t n_head, int64_t n_kv_heads, int64_t d_ff) {
  ModelConfig c = llama_shape(n_layer, d_model, n_head, n_kv_heads, d_ff, 8192);
  c.vocab_size = 49152;
  c.tie_embeddings = true;
  c.rope_base = 100000.0;
  return c;
}

// Qwen2.5 0.5B (Qwen Team 2024): q/k/v biases, tied embeddings, rope base 1e6, RMSNorm eps 1e-6.
ModelConfig qwen25_half_b() {
  ModelConfig c = llama_shape(24, 896, 14, 2, 4864, 32768);
  c.vocab_size = 151936;
  c.qkv_bias = true;
  c.tie_embeddings = true;
  c.rope_base = 1000000.0;
  c.norm_eps = 1e-6;
  return c;
}

// Mistral 7B v0.1 (Jiang et al. 2023): a 4096-position sliding window over a 32768 context.
ModelConfig mistral_7b() {
  ModelConfig c = llama_shape(32, 4096, 32, 8, 14336, 32768);
  c.attention_window = 4096;
  return c;
}

ModelConfig llama_nano() {
  ModelConfig c = llama_shape(4, 128, 4, 2, 0, 64);  // d_ff derived: 8/3 * 128 -> 384
  c.vocab_size = 0;                                  // from the tokenizer
  return c;
}
}  // namespace

const std::vector<Preset>& llama_presets() {
  static const std::vector<Preset> presets = {
      {"llama-nano", "Llama-style CPU shape: 4 layers, 4 heads (2 kv), d 128, ctx 64", llama_nano()},
      {"tinyllama-1.1b", "TinyLlama 1.1B: 22 layers, 32 heads (4 kv), d 2048, ff 5632",
       llama_shape(22, 2048, 32, 4, 5632, 2048), "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T"},
      {"llama2-7b", "Llama 2 7B: 32 layers, 32 heads, d 4096, ff 11008", llama_shape(32, 4096, 32, 32, 11008, 4096), "meta-llama/Llama-2-7b-hf"},
      {"llama2-13b", "Llama 2 13B: 40 layers, 40 heads, d 5120, ff 13824",
       llama_shape(40, 5120, 40, 40, 13824, 4096), "meta-llama/Llama-2-13b-hf"},
      {"llama2-70b", "Llama 2 70B: 80 layers, 64 heads (8 kv), d 8192, ff 28672",
       llama_shape(80, 8192, 64, 8, 28672, 4096), "meta-llama/Llama-2-70b-hf"},
      {"smollm2-135m", "SmolLM2 135M: 30 layers, 9 heads (3 kv), d 576, ff 1536, tied", smollm2_shape(30, 576, 9, 3, 1536),
       "HuggingFaceTB/SmolLM2-135M"},
      {"smollm2-360m", "SmolLM2 360M: 32 layers, 15 heads (5 kv), d 960, ff 2560, tied",
       smollm2_shape(32, 960, 15, 5, 2560), "HuggingFaceTB/SmolLM2-360M"},
      {"qwen2.5-0.5b", "Qwen2.5 0.5B: 24 layers, 14 heads (2 kv), d 896, ff 4864, q/k/v biases, tied",
       qwen25_half_b(), "Qwen/Qwen2.5-0.5B"},
      {"mistral-7b", "Mistral 7B v0.1: 32 layers, 32 heads (8 kv), d 4096, ff 14336, window 4096", mistral_7b(),
       "mistralai/Mistral-7B-v0.1"},
  };
  return presets;
}

}  // namespace lmzoo
