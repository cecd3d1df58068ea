// UTF-8 <-> code points and canonical decomposition (NFD) for the Hugging Face tokenizers, plus their one error
// type. Validation is data/unicode/utf8.h's; leaves out NFC/NFKC composition.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lmzoo {

// What the HF tokenizers throw for errors a user can cause: a missing or malformed vocabulary file (the message
// names the file and line), text that is not UTF-8, an id out of range.
struct HfTokenizerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The code points of TEXT; throws HfTokenizerError (data/unicode/utf8.h's message, naming SOURCE) if it is not UTF-8.
std::u32string utf8_to_code_points(std::string_view text, const std::string& source = "input text");

// Appends CP as UTF-8 to OUT (CP must be a Unicode scalar value).
void append_utf8(char32_t cp, std::string& out);
std::string code_points_to_utf8(const std::u32string& cps);

// Canonical decomposition (Unicode NFD, utf8proc's): every code point fully decomposed (Hangul syllables too), each
// run of combining marks stably sorted by canonical combining class.
std::u32string nfd(const std::u32string& text);

}  // namespace lmzoo
