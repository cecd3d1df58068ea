// Fill-mask for encoder-only models: the most likely tokens, with probabilities, at each [MASK].
// Leaves out: multi-token (span) filling.
#pragma once
#include <cstdint>
#include <vector>

#include "data/tokenizers/special_ids.h"
#include "models/bert.h"

namespace lmzoo {

struct MaskCandidate {
  int64_t id;
  double probability;
};

// ids: one unframed sequence (at most max_seq_len - 2 ids) holding special.mask at the positions to
// fill; it is framed [CLS] ids [SEP] (SPECIAL's). Returns, for each [MASK] in order, its top_k candidates, most
// likely first (SPECIAL's ids excluded).
std::vector<std::vector<MaskCandidate>> fill_masks(Bert& model, const SpecialIds& special,
                                                   const std::vector<int64_t>& ids, int64_t top_k);

}  // namespace lmzoo
