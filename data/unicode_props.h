// Unicode character properties and normalisation forms for the tokenizers, over the packaged utf8proc library (its
// Unicode version, see unicode_version()). Leaves out: case folding, scripts.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lmzoo::unicode {

// The Unicode version of utf8proc's data ("15.0.0" for utf8proc 2.8).
const char* unicode_version();

bool is_letter(char32_t cp);             // \p{L}: general category L*
bool is_number(char32_t cp);             // \p{N}: general category N* (Rust's char::is_numeric)
bool is_white_space(char32_t cp);        // the White_Space property (Rust's char::is_whitespace, \s of Oniguruma)
bool is_python_space(char32_t cp);       // Python's str.isspace(): category Zs or bidi class WS, B or S
bool is_punctuation(char32_t cp);        // general category P*
bool is_nonspacing_mark(char32_t cp);    // general category Mn
bool is_control_or_format(char32_t cp);  // general category Cc or Cf
bool is_other_assigned(char32_t cp);     // general category Cc, Cf, Co or Cs: C* except Cn (unassigned)
bool is_space_separator(char32_t cp);    // general category Zs

// Canonical combining class (0 for starters).
int combining_class(char32_t cp);

// Appends CP's lower-case mapping as Rust's char::to_lowercase gives it: the simple mapping, except U+0130 (the
// one unconditional multi-character lower-case mapping of SpecialCasing.txt) which gives "i\u0307".
void append_lower(char32_t cp, std::u32string& out);

enum class NormalForm { NFC, NFD, NFKC, NFKD };

// TEXT (valid UTF-8) in normalisation form FORM, as UTF-8.
std::string normalize(std::string_view text, NormalForm form);

// The byte lengths of the extended grapheme clusters of TEXT (valid UTF-8), in order: UAX #29 as utf8proc's
// grapheme_break_stateful gives it (what Rust's unicode-segmentation graphemes(true) splits at).
std::vector<size_t> grapheme_lengths(std::string_view text);

// The code points of TEXT (valid UTF-8) in canonical decomposition (NFD).
std::u32string nfd_code_points(std::string_view text);

}  // namespace lmzoo::unicode
