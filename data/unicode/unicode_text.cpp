// UTF-8 decoding/encoding of code points, and NFD through data/unicode/unicode_props.h (utf8proc). Leaves out composition.
#include "data/unicode/unicode_text.h"

#include "data/unicode/unicode_props.h"
#include "data/unicode/utf8.h"

namespace lmzoo {

std::u32string utf8_to_code_points(std::string_view text, const std::string& source) {
  const size_t bad = find_invalid_utf8(text);
  if (bad != std::string::npos) throw HfTokenizerError(utf8_error(text, bad, source));
  std::u32string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {  // valid UTF-8 from here on: only the lead byte says the length
    const unsigned char c = s[i];
    if (c < 0x80) {
      out.push_back(c);
      i += 1;
    } else if (c < 0xE0) {
      out.push_back(static_cast<char32_t>((c & 0x1F) << 6 | (s[i + 1] & 0x3F)));
      i += 2;
    } else if (c < 0xF0) {
      out.push_back(static_cast<char32_t>((c & 0x0F) << 12 | (s[i + 1] & 0x3F) << 6 | (s[i + 2] & 0x3F)));
      i += 3;
    } else {
      out.push_back(static_cast<char32_t>((c & 0x07) << 18 | (s[i + 1] & 0x3F) << 12 | (s[i + 2] & 0x3F) << 6 |
                                          (s[i + 3] & 0x3F)));
      i += 4;
    }
  }
  return out;
}

void append_utf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string code_points_to_utf8(const std::u32string& cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append_utf8(cp, out);
  return out;
}

std::u32string nfd(const std::u32string& text) { return unicode::nfd_code_points(code_points_to_utf8(text)); }

}  // namespace lmzoo
