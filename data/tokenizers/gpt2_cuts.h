// Where text may be cut for GPT-2's byte-level BPE so that the pieces, encoded separately, give the ids of the
// whole text: positions where the pre-tokenising pattern (data/tokenizers/gpt2_bpe.h) always ends a match, whatever the
// text around. Leaves out: searching for a cut (data/tokenizers/text_cut.h) and special tokens written in the text.
#pragma once
#include <string_view>

#include "data/tokenizers/text_cut.h"

namespace lmzoo {

// The cut allowed before byte POS of TEXT, or none (see CutAt). Allowed where, with A the character before and
// B the one at POS:
//   B is U+0020 and A is not white space: A's match ends at A (only a leading U+0020 joins a non-space run),
//     and a match starts at the space;
//   A is white space other than U+0020 between two characters that are not: \s+(?!\S) fails at A (B follows),
//     so \s+ takes A alone, in the whole text as at the end of the left piece;
//   A and B are not white space, of different classes (\p{L}, \p{N}, other) and A is not an apostrophe: A's
//     run or contraction ends at A.
// The left piece ends in a character that is not white space (or in A alone), so no \s+(?!\S) sees its end;
// matches after POS depend only on the text after POS (the pattern looks ahead, never behind).
TextCut gpt2_cut_at(std::string_view text, size_t pos);

}  // namespace lmzoo
