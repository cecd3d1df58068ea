// Where a long text may be cut so that encoding the pieces one by one gives the ids of encoding it whole: the
// cut a tokenizer allows at one position, and the search for the cut nearest a length limit.
// Leaves out: the tokenizers' own rules (data/tokenizers/spm_cuts.h, data/tokenizers/gpt2_cuts.h, the WordPiece backend).
#pragma once
#include <cstddef>
#include <functional>
#include <string_view>

namespace lmzoo {

// Encode TEXT[0, end) and TEXT[next, ...) separately; next is end, or end + 1 where the cut drops a space
// that the tokenizer's dummy prefix puts back. end == 0: no cut.
struct TextCut {
  size_t end = 0, next = 0;
  bool found() const { return end > 0; }
};

// The cut a tokenizer allows before byte POS of TEXT (0 < pos < text.size()), or none. TEXT may be a prefix of
// the rest of a document: a rule looks only at bytes it is given.
using CutAt = std::function<TextCut(std::string_view text, size_t pos)>;

// A tokenizer's cuts: RULE gives its exact ones; FORCED the best there is for text that must be cut anyway.
struct TextCutter {
  CutAt rule, forced;
};

// The allowed cut of TEXT with the largest end <= LIMIT, else the one with the smallest end > LIMIT, else none.
// Linear in the bytes looked at.
TextCut find_cut(std::string_view text, size_t limit, const CutAt& cut_at);

// A cut at a UTF-8 character boundary at or before LIMIT (after LIMIT when a character starts at 0 and runs
// past it): for text no rule may cut, when it must be cut all the same.
TextCut character_cut(std::string_view text, size_t limit);

}  // namespace lmzoo
