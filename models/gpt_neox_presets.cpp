// GPT-NeoX presets (Biderman et al. 2023, Pythia) as gpt-arch configs.
#include "models/gpt_neox_presets.h"

namespace lmzoo {

namespace {
// Pythia: 4 d feed-forward, exact GELU, rotary over a quarter of each head (base 10000), context 2048.
ModelConfig pythia_shape(int64_t n_layer, int64_t d_model, int64_t n_head) {
  ModelConfig c;
  c.arch = Arch::kGpt;
  c.vocab_size = 50304;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.d_model = d_model;
  c.d_ff = 4 * d_model;
  c.max_seq_len = 2048;
  c.dropout = 0.0;
  c.bias = true;
  c.tie_embeddings = false;
  c.norm = NormKind::kLayerNorm;
  c.norm_position = NormPosition::kPre;
  c.norm_eps = 1e-5;
  c.activation = Activation::kGelu;
  c.position = Position::kRope;
  c.rope_base = 10000.0;
  c.rope_fraction = 0.25;
  c.parallel_residual = true;
  c.init = InitScheme::kGpt2;
  return c;
}
}  // namespace

const std::vector<Preset>& gpt_neox_presets() {
  static const std::vector<Preset> presets = {
      {"pythia-70m", "Pythia 70M: 6 layers, 8 heads, d 512, ff 2048, parallel residual, rotary 25%",
       pythia_shape(6, 512, 8), "EleutherAI/pythia-70m"},
      {"pythia-160m", "Pythia 160M: 12 layers, 12 heads, d 768, ff 3072, parallel residual, rotary 25%",
       pythia_shape(12, 768, 12), "EleutherAI/pythia-160m"},
      {"pythia-410m", "Pythia 410M: 24 layers, 16 heads, d 1024, ff 4096, parallel residual, rotary 25%",
       pythia_shape(24, 1024, 16), "EleutherAI/pythia-410m"},
  };
  return presets;
}

}  // namespace lmzoo
