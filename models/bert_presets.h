// BERT presets (the published bert-tiny ... bert-large shapes) and their published parameter counts.
// Leaves out: registration in all_presets() (models/presets.cpp).
#pragma once
#include <vector>

#include "models/config.h"
#include "models/preset.h"

namespace lmzoo {

// bert-tiny, -mini, -small, -medium, -base, -large: 30522 vocab, 512 positions, 2 token types,
// LayerNorm eps 1e-12, GELU (erf), post-norm, biases, dropout 0.1, BERT init.
const std::vector<Preset>& bert_presets();

// roberta-base (50265 byte-level BPE vocabulary, 1 token type, position_offset 2, eps 1e-5) and distilbert-base
// (6 layers, no token types) follow them.

// Whether the Hugging Face class of this shape has a pooler: BERT's do (BertModel; BertForMaskedLM checkpoints
// trained with next-sentence prediction carry one), RobertaForMaskedLM and DistilBertForMaskedLM do not.
// lmzoo's Bert builds its pooler whatever the shape (a classifier fine-tune reads it; masked LM leaves it untrained);
// export --format hf leaves it out where the class has none.
bool bert_has_hf_pooler(const ModelConfig& config);

// The published count of a BERT-family shape, parameter_count less one part: BERT's encoder with its pooler, less
// the MLM head (Google's numbers, bert-base 109,482,240); RoBERTa and DistilBERT shapes as their masked-LM class's
// num_parameters() counts them, less the pooler (MLM head, tied decoder once: roberta-base 124,697,433,
// distilbert-base 66,985,530).
int64_t published_bert_parameters(const ModelConfig& config);

}  // namespace lmzoo
