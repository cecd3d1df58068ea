// BERT presets (Devlin et al. 2019; Turc et al. 2019 for the small shapes), RoBERTa and DistilBERT, and which parts
// their published counts leave out.
#include "models/bert_presets.h"

#include "models/parameter_sizes.h"

namespace lmzoo {

namespace {
ModelConfig bert_shape(int64_t n_layer, int64_t d_model, int64_t n_head, int64_t d_ff) {
  ModelConfig c;
  c.arch = Arch::kBert;
  c.vocab_size = 30522;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.d_model = d_model;
  c.d_ff = d_ff;
  c.max_seq_len = 512;
  c.type_vocab_size = 2;
  c.dropout = 0.1;
  c.bias = true;
  c.tie_embeddings = true;
  c.norm = NormKind::kLayerNorm;
  c.norm_position = NormPosition::kPost;
  c.norm_eps = 1e-12;
  c.activation = Activation::kGelu;
  c.position = Position::kLearned;
  c.init = InitScheme::kBert;
  return c;
}

// RoBERTa (Liu et al. 2019): BERT's shape, byte-level BPE vocabulary of 50265, one token type, 514 position rows of
// which the first 2 (padding_idx + 1) precede position 0, LayerNorm eps 1e-5.
ModelConfig roberta_shape(int64_t n_layer, int64_t d_model, int64_t n_head, int64_t d_ff) {
  ModelConfig c = bert_shape(n_layer, d_model, n_head, d_ff);
  c.vocab_size = 50265;
  c.type_vocab_size = 1;
  c.position_offset = 2;
  c.norm_eps = 1e-5;
  return c;
}

// DistilBERT (Sanh et al. 2019): BERT-base's width over 6 layers, no token types.
ModelConfig distilbert_shape(int64_t n_layer, int64_t d_model, int64_t n_head, int64_t d_ff) {
  ModelConfig c = bert_shape(n_layer, d_model, n_head, d_ff);
  c.type_vocab_size = 0;
  return c;
}
}  // namespace

bool bert_has_hf_pooler(const ModelConfig& c) { return c.position_offset == 0 && c.type_vocab_size > 0; }

int64_t published_bert_parameters(const ModelConfig& c) {
  return parameter_count(c, {bert_has_hf_pooler(c) ? ParameterPart::kMlmHead : ParameterPart::kPooler});
}

const std::vector<Preset>& bert_presets() {
  static const std::vector<Preset> presets = {
      {"bert-tiny", "BERT tiny: 2 layers, 2 heads, d 128, ff 512", bert_shape(2, 128, 2, 512), "google/bert_uncased_L-2_H-128_A-2"},
      {"bert-mini", "BERT mini: 4 layers, 4 heads, d 256, ff 1024", bert_shape(4, 256, 4, 1024), "google/bert_uncased_L-4_H-256_A-4"},
      {"bert-small", "BERT small: 4 layers, 8 heads, d 512, ff 2048", bert_shape(4, 512, 8, 2048), "google/bert_uncased_L-4_H-512_A-8"},
      {"bert-medium", "BERT medium: 8 layers, 8 heads, d 512, ff 2048", bert_shape(8, 512, 8, 2048), "google/bert_uncased_L-8_H-512_A-8"},
      {"bert-base", "BERT base: 12 layers, 12 heads, d 768, ff 3072", bert_shape(12, 768, 12, 3072), "google-bert/bert-base-uncased"},
      {"bert-large", "BERT large: 24 layers, 16 heads, d 1024, ff 4096", bert_shape(24, 1024, 16, 4096), "google-bert/bert-large-uncased"},
      {"roberta-base", "RoBERTa base: BERT base with byte-level BPE, 1 token type, positions from 2", roberta_shape(12, 768, 12, 3072), "FacebookAI/roberta-base"},
      {"distilbert-base", "DistilBERT base: 6 layers, 12 heads, d 768, ff 3072, no token types", distilbert_shape(6, 768, 12, 3072), "distilbert/distilbert-base-uncased"},
  };
  return presets;
}

}  // namespace lmzoo
