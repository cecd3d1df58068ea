// The Unicode data the Rust tokenizers library (0.22) decides with, as range tables that
// tools/hf_tokenizers/gen_unicode_tables.js read off the library and wrote into unicode_tables.cpp; lookups by binary
// search. Leaves out: White_Space (stable, spelled out in unicode_props.cpp) and the decompositions themselves.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace lmzoo::unicode::tables {

struct CodeRange {
  char32_t first, last;  // inclusive
};

// A set of code points: sorted, disjoint ranges.
struct RangeSet {
  const CodeRange* ranges;
  size_t size;
  bool contains(char32_t cp) const {
    if (size == 0 || cp < ranges[0].first || cp > ranges[size - 1].last) return false;
    const CodeRange* end = ranges + size;
    const CodeRange* r = std::upper_bound(ranges, end, cp, [](char32_t c, const CodeRange& x) { return c < x.first; });
    return r != ranges && cp <= (r - 1)->last;
  }
};

// FIRST, FIRST + STRIDE, ... LAST map to themselves plus DELTA.
struct LowerRun {
  char32_t first, last;
  uint32_t stride;
  int32_t delta;
};

// Single-code-point mappings as sorted runs that do not interleave.
struct LowerTable {
  const LowerRun* runs;
  size_t size;
  // CP's mapping, CP itself where there is none.
  char32_t map(char32_t cp) const {
    const LowerRun* end = runs + size;
    const LowerRun* r = std::upper_bound(runs, end, cp, [](char32_t c, const LowerRun& x) { return c < x.first; });
    if (r == runs || cp > (--r)->last || (cp - r->first) % r->stride != 0) return cp;
    return static_cast<char32_t>(static_cast<int32_t>(cp) + r->delta);
  }
};

// Which decision each table serves, from which of the library's sources (Unicode versions as the sweep shows them):
extern const RangeSet kRegexLetter;      // \p{L} of its bundled Oniguruma (Unicode 16.0): ByteLevel's GPT-2 pattern
extern const RangeSet kRegexNumber;      // \p{N} of the same
extern const RangeSet kRustNumeric;      // Rust's char::is_numeric (Rust's Unicode, 17.0): Digits
extern const RangeSet kBertPunctuation;  // is_ascii_punctuation() || unicode_categories' is_punctuation(): that
                                         // crate's tables are Unicode 8.0's or so (U+2E43, Pd since 9.0, is not
                                         // there): BertPreTokenizer, Punctuation
extern const RangeSet kOther;            // unicode_categories' is_other(), Cc Cf Co (U+08E2, Cf since 9.0, is not
                                         // there): BertNormalizer's clean_text, and NUL
extern const RangeSet kNonspacingMark;   // unicode_categories' is_mark_nonspacing(), Mn of Unicode 8.0 (of the code
                                         // points NFD leaves alone, all it is asked about): BertNormalizer
extern const RangeSet kCombiningMark;    // unicode-normalization-alignments' is_combining_mark(): every mark (Mn, Mc,
                                         // Me) of Unicode 9.0: StripAccents
extern const RangeSet kCanonical;        // code points unicode-normalization-alignments' NFD decomposes (its
                                         // tables: Unicode 9.0)
extern const RangeSet kCompatibility;    // ... its NFKD decomposes
extern const RangeSet kNonzeroCcc;       // not decomposed, with a canonical combining class above 0 there
extern const LowerTable kLower;          // Rust's char::to_lowercase (one code point; U+0130 alone gives two)

}  // namespace lmzoo::unicode::tables
