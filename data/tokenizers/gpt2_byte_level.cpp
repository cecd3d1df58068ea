// GPT-2's pre-tokenising pattern by hand over UTF-8 (no regex engine: several times faster), with the character
// classes from data/unicode/unicode_props.h, and the byte-to-character map. Leaves out: the merges (data/tokenizers/gpt2_bpe.cpp).
#include "data/tokenizers/gpt2_byte_level.h"

#include <array>

#include "data/unicode/unicode_props.h"
#include "data/unicode/unicode_text.h"
#include "data/unicode/utf8.h"

namespace lmzoo {

const char* const kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

enum class CharClass : uint8_t { Letter, Number, Space, Other };  // \p{L}, \p{N}, \s, the rest

CharClass classify(char32_t c) {
  if (unicode::is_letter(c)) return CharClass::Letter;
  if (unicode::is_number(c)) return CharClass::Number;
  if (unicode::is_white_space(c)) return CharClass::Space;
  return CharClass::Other;
}

// The text as code points with their classes and byte offsets, decoded once.
struct Decoded {
  std::vector<char32_t> cps;
  std::vector<CharClass> cls;
  std::vector<size_t> offset;  // byte offset of each code point, then the text's size
};

Decoded decode(std::string_view text) {
  Decoded d;
  d.cps.reserve(text.size());
  d.cls.reserve(text.size());
  d.offset.reserve(text.size() + 1);
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = s[i];
    char32_t cp;
    size_t n;
    if (c < 0x80) {
      cp = c, n = 1;
    } else if (c < 0xE0) {
      cp = static_cast<char32_t>((c & 0x1F) << 6 | (s[i + 1] & 0x3F)), n = 2;
    } else if (c < 0xF0) {
      cp = static_cast<char32_t>((c & 0x0F) << 12 | (s[i + 1] & 0x3F) << 6 | (s[i + 2] & 0x3F)), n = 3;
    } else {
      cp = static_cast<char32_t>((c & 0x07) << 18 | (s[i + 1] & 0x3F) << 12 | (s[i + 2] & 0x3F) << 6 |
                                 (s[i + 3] & 0x3F)),
      n = 4;
    }
    d.cps.push_back(cp);
    d.cls.push_back(classify(cp));
    d.offset.push_back(i);
    i += n;
  }
  d.offset.push_back(text.size());
  return d;
}

size_t run_end(const Decoded& d, size_t i, CharClass k) {
  while (i < d.cls.size() && d.cls[i] == k) ++i;
  return i;
}

// Length of the contraction at I ('s 't 're 've 'm 'll 'd, lower case only), or 0.
size_t contraction_at(const Decoded& d, size_t i) {
  const auto& s = d.cps;
  if (s[i] != U'\'' || i + 1 >= s.size()) return 0;
  const char32_t a = s[i + 1];
  if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
  if (i + 2 >= s.size()) return 0;
  const char32_t b = s[i + 2];
  if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) return 3;
  return 0;
}

// Length in code points of the pattern's match at I (always >= 1: every character is in one of the classes).
size_t match_at(const Decoded& d, size_t i) {
  if (size_t n = contraction_at(d, i)) return n;
  const size_t size = d.cps.size();
  const size_t j = (d.cps[i] == U' ' && i + 1 < size) ? i + 1 : i;  // " ?" takes the space if a class follows
  const CharClass k = d.cls[j];
  if (k != CharClass::Space) return run_end(d, j, k) - i;  // ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+
  // d.cps[i] is white space (j == i, or a space followed by white space).
  const size_t end = run_end(d, i, CharClass::Space);
  if (end == size) return end - i;       // \s+(?!\S) at the end of the text
  if (end - i >= 2) return end - 1 - i;  // \s+(?!\S): leave the last one for the next word
  return 1;                              // \s+
}

}  // namespace

std::vector<std::pair<size_t, size_t>> gpt2_pretokenize_ranges(std::string_view text) {
  const Decoded d = decode(text);
  std::vector<std::pair<size_t, size_t>> out;
  out.reserve(d.cps.size() / 3 + 1);
  for (size_t i = 0; i < d.cps.size();) {
    const size_t n = match_at(d, i);
    out.emplace_back(d.offset[i], d.offset[i + n]);
    i += n;
  }
  return out;
}

std::vector<std::string> gpt2_pretokenize(const std::string& text) {
  const size_t bad = find_invalid_utf8(text);
  if (bad != std::string::npos) throw HfTokenizerError(utf8_error(text, bad, "input text"));
  std::vector<std::string> out;
  for (const auto& [b, e] : gpt2_pretokenize_ranges(text)) out.emplace_back(text, b, e - b);
  return out;
}

char32_t gpt2_byte_to_char(uint8_t byte) {
  const auto self = [](int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255); };
  if (self(byte)) return byte;
  char32_t n = 0;  // count the bytes before BYTE that do not stand for themselves
  for (int b = 0; b < byte; ++b) n += self(b) ? 0 : 1;
  return 256 + n;
}

void append_byte_level(std::string_view bytes, std::string& out) {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    for (int b = 0; b < 256; ++b) append_utf8(gpt2_byte_to_char(static_cast<uint8_t>(b)), t[b]);
    return t;
  }();
  for (char c : bytes) out += table[static_cast<unsigned char>(c)];
}

}  // namespace lmzoo
