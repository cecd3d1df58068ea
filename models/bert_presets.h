// BERT presets (the published bert-tiny ... bert-large shapes) and BERT parameter counting.
// Leaves out: registration in all_presets() (models/presets.cpp).
#pragma once
#include <vector>

#include "models/config.h"
#include "models/presets.h"

namespace lmzoo {

// bert-tiny, -mini, -small, -medium, -base, -large: 30522 vocab, 512 positions, 2 token types,
// LayerNorm eps 1e-12, GELU (erf), post-norm, biases, dropout 0.1, BERT init.
const std::vector<Preset>& bert_presets();

// Parameter count of the Bert a config builds: embeddings (word, position, token type, norm), blocks,
// ln_f (pre-norm), plus the pooler and the MLM head (dense, norm, output bias; decoder if untied)
// when asked. bert-base with pooler, without MLM head: 109,482,240.
int64_t count_bert_parameters(const ModelConfig& config, bool with_pooler = true, bool with_mlm_head = true);

}  // namespace lmzoo
