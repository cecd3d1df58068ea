// Unicode character properties and normalisation forms for the tokenizers, each as the Rust tokenizers library
// decides it: range tables of its own data (data/unicode/unicode_tables.h) over the packaged utf8proc library
// (unicode_version()), which gives the decompositions, class values, Python's spaces and grapheme clusters.
// Leaves out: case folding, scripts.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lmzoo::unicode {

// The Unicode version of utf8proc's data ("15.0.0" for utf8proc 2.8).
const char* unicode_version();

bool is_letter(char32_t cp);             // \p{L} of the Rust library's Oniguruma (Unicode 16.0): GPT-2's pattern
bool is_number(char32_t cp);             // \p{N} of the same
bool is_numeric(char32_t cp);            // Rust's char::is_numeric (Rust's Unicode, 17.0): the Digits pre-tokenizer
bool is_white_space(char32_t cp);        // the White_Space property (Rust's char::is_whitespace, \s of Oniguruma)
bool is_python_space(char32_t cp);       // Python's str.isspace(): category Zs or bidi class WS, B or S (utf8proc)
bool is_bert_punctuation(char32_t cp);   // Rust's is_ascii_punctuation() || unicode_categories' is_punctuation()
                                         // (P*, Unicode 8.0's or so): BertPreTokenizer, Punctuation, WordPiece
bool is_nonspacing_mark(char32_t cp);    // unicode_categories' is_mark_nonspacing(): Mn of Unicode 8.0 (BERT's
                                         // strip_accents, after NFD)
bool is_combining_mark(char32_t cp);     // unicode-normalization-alignments' is_combining_mark(): Mn, Mc and Me of
                                         // Unicode 9.0 (the StripAccents normalizer)
bool is_control_or_format(char32_t cp);  // general category Cc or Cf (utf8proc)
bool is_other_assigned(char32_t cp);     // unicode_categories' is_other(): Cc, Cf or Co, Unicode 8.0's or so (BERT)
bool is_space_separator(char32_t cp);    // general category Zs (utf8proc)

// Canonical combining class as the Rust library's normalisation (unicode-normalization-alignments, Unicode 9.0)
// has it: utf8proc's value for the code points that crate knows, 0 (a starter) for those it does not.
int combining_class(char32_t cp);

// Appends CP's lower-case mapping as Rust's char::to_lowercase gives it (Unicode 17.0): the simple mapping, except
// U+0130 (the one unconditional multi-character lower-case mapping of SpecialCasing.txt) which gives "i\u0307".
void append_lower(char32_t cp, std::u32string& out);

enum class NormalForm { NFC, NFD, NFKC, NFKD };

// TEXT (valid UTF-8) in normalisation form FORM, as UTF-8, as the Rust library gives it: utf8proc's decompositions
// and compositions for the code points unicode-normalization-alignments decomposes, combining_class() for the order;
// what that crate does not know stays as it is.
std::string normalize(std::string_view text, NormalForm form);

// The byte lengths of the extended grapheme clusters of TEXT (valid UTF-8), in order: UAX #29 as utf8proc's
// grapheme_break_stateful gives it (what Rust's unicode-segmentation graphemes(true) splits at).
std::vector<size_t> grapheme_lengths(std::string_view text);

// The code points of TEXT (valid UTF-8) in canonical decomposition (NFD), as normalize() gives it.
std::u32string nfd_code_points(std::string_view text);

}  // namespace lmzoo::unicode
