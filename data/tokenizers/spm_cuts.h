// Where a SentencePiece model's text may be cut so that encoding the pieces separately gives the ids of
// sentencepiece's encoding of the whole text, derived from the model's normaliser settings and pieces.
// Leaves out: searching a text for a cut (data/tokenizers/text_cut.h) and encoding.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizers/spm_settings.h"
#include "data/tokenizers/text_cut.h"

namespace lmzoo {

struct SpmCutRule {
  // Before a ' ' that follows an ASCII graphic character and precedes more text: normalisation and the model
  // see "x" + "▁..." there and no piece spans "x▁". With drop_space the space is dropped, since the dummy
  // prefix of the next piece's encoding stands for it; without (no dummy prefix) it starts the next piece.
  bool before_space = false;
  bool drop_space = false;
  bool sentinels = false;  // T5's <extra_id_N> split the text: no cut in "> " or " <" (the space is a segment's)
  bool after_newline = false;  // identity normalisation, no dummy prefix, no piece holds "\n"
  // Unigram: Viterbi sums float scores along the whole text, so near ties resolve differently at different
  // offsets: only the whole text gives sentencepiece's ids, and the rules apply only to forced cuts.
  bool whole_only = false;
};

// The rule for a model with SETTINGS whose text-matching pieces (normal, user-defined, unused) are PIECES;
// SENTINELS when the backend splits the text at T5's <extra_id_N>.
SpmCutRule spm_cut_rule(const SpmSettings& settings, const std::vector<std::string>& pieces, bool sentinels);

// The cut RULE allows before byte POS of TEXT (see CutAt); FORCED: also for a whole_only model.
TextCut spm_cut_at(const SpmCutRule& rule, std::string_view text, size_t pos, bool forced);

}  // namespace lmzoo
