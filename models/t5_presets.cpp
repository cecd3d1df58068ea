// T5 presets (Raffel et al. 2020; the T5 v1.1 release notes).
#include "models/t5_presets.h"

namespace lmzoo {

namespace {
ModelConfig t5_shape(int64_t n_layer, int64_t d_model, int64_t n_head, int64_t d_ff, bool v1_1) {
  ModelConfig c;
  c.arch = Arch::kT5;
  c.vocab_size = 32128;
  c.n_layer = n_layer;
  c.n_decoder_layer = 0;  // as many decoder layers
  c.n_head = n_head;
  c.d_model = d_model;
  c.head_dim = 64;
  c.d_ff = d_ff;
  c.max_seq_len = 512;
  c.dropout = v1_1 ? 0.0 : 0.1;
  c.bias = false;
  c.tie_embeddings = !v1_1;
  c.norm = NormKind::kRmsNorm;
  c.norm_position = NormPosition::kPre;
  c.norm_eps = 1e-6;
  c.activation = v1_1 ? Activation::kGeglu : Activation::kRelu;
  c.position = Position::kRelative;
  c.relative_buckets = 32;
  c.relative_max_distance = 128;
  c.init = InitScheme::kT5;
  return c;
}
}  // namespace

const std::vector<Preset>& t5_presets() {
  static const std::vector<Preset> presets = {
      {"t5-small", "T5 small: 6+6 layers, 8 heads, d 512, ff 2048, ReLU, tied", t5_shape(6, 512, 8, 2048, false), "google-t5/t5-small"},
      {"t5-base", "T5 base: 12+12 layers, 12 heads, d 768, ff 3072, ReLU, tied", t5_shape(12, 768, 12, 3072, false), "google-t5/t5-base"},
      {"t5-large", "T5 large: 24+24 layers, 16 heads, d 1024, ff 4096, ReLU, tied",
       t5_shape(24, 1024, 16, 4096, false), "google-t5/t5-large"},
      {"t5-v1_1-small", "T5 v1.1 small: 8+8 layers, 6 heads, d 512, ff 1024, gated GELU, untied",
       t5_shape(8, 512, 6, 1024, true), "google/t5-v1_1-small"},
      {"t5-v1_1-base", "T5 v1.1 base: 12+12 layers, 12 heads, d 768, ff 2048, gated GELU, untied",
       t5_shape(12, 768, 12, 2048, true), "google/t5-v1_1-base"},
  };
  return presets;
}

}  // namespace lmzoo
