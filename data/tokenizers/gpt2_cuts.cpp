// GPT-2 cut rule: decodes the characters around a byte position and applies the three cases of gpt2_cut_at.
#include "data/tokenizers/gpt2_cuts.h"

#include "data/unicode/unicode_props.h"

namespace lmzoo {

namespace {

constexpr char32_t kNone = 0xFFFFFFFF;  // no complete, valid character there

bool continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The character starting at byte AT of TEXT, its length in LEN; kNone if it is cut off or malformed.
char32_t char_at(std::string_view text, size_t at, size_t& len) {
  if (at >= text.size()) return kNone;
  const auto lead = static_cast<unsigned char>(text[at]);
  len = lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : (lead >> 3) == 30 ? 4 : 0;
  if (len == 0 || at + len > text.size()) return kNone;
  char32_t cp = len == 1 ? lead : lead & (0x7F >> len);
  for (size_t i = 1; i < len; ++i) {
    const auto c = static_cast<unsigned char>(text[at + i]);
    if (!continuation(c)) return kNone;
    cp = cp << 6 | (c & 0x3F);
  }
  return cp;
}

// The character ending just before byte END of TEXT; its first byte in START. kNone if there is none.
char32_t char_before(std::string_view text, size_t end, size_t& start) {
  if (end == 0) return kNone;
  start = end - 1;
  while (start > 0 && end - start < 4 && continuation(static_cast<unsigned char>(text[start]))) --start;
  size_t len = 0;
  const char32_t cp = char_at(text, start, len);
  return start + len == end ? cp : kNone;
}

enum class Class { kLetter, kNumber, kOther, kSpace };

Class class_of(char32_t c) {
  if (unicode::is_white_space(c)) return Class::kSpace;
  if (unicode::is_letter(c)) return Class::kLetter;
  if (unicode::is_number(c)) return Class::kNumber;
  return Class::kOther;
}

}  // namespace

TextCut gpt2_cut_at(std::string_view text, size_t pos) {
  if (pos == 0 || pos >= text.size() || continuation(static_cast<unsigned char>(text[pos]))) return {};
  size_t a_start = 0, b_len = 0;
  const char32_t a = char_before(text, pos, a_start), b = char_at(text, pos, b_len);
  if (a == kNone || b == kNone) return {};
  const Class ca = class_of(a), cb = class_of(b);
  if (b == U' ' && ca != Class::kSpace) return {pos, pos};
  if (ca == Class::kSpace && a != U' ' && cb != Class::kSpace) {
    size_t before_start = 0;
    const char32_t before = char_before(text, a_start, before_start);
    if (before != kNone && class_of(before) != Class::kSpace) return {pos, pos};
    return {};
  }
  if (ca != Class::kSpace && cb != Class::kSpace && ca != cb && a != U'\'') return {pos, pos};
  return {};
}

}  // namespace lmzoo
