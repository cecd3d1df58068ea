// Unicode properties and normalisation over utf8proc: categories and combining classes from its property
// records, NFC/NFD/NFKC/NFKD from utf8proc_decompose + utf8proc_reencode, grapheme clusters from
// utf8proc_grapheme_break_stateful. Leaves out: its other options
// (case folding, newline handling, stripping).
#include "data/unicode_props.h"

#include <stdexcept>
#include <utf8proc.h>

namespace lmzoo::unicode {

namespace {

utf8proc_category_t category(char32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)); }

utf8proc_option_t options_of(NormalForm form) {
  const int stable = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::NFC: return static_cast<utf8proc_option_t>(stable | UTF8PROC_COMPOSE);
    case NormalForm::NFD: return static_cast<utf8proc_option_t>(stable | UTF8PROC_DECOMPOSE);
    case NormalForm::NFKC: return static_cast<utf8proc_option_t>(stable | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
    case NormalForm::NFKD: return static_cast<utf8proc_option_t>(stable | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  }
  throw std::logic_error("NormalForm value outside its enum");
}

// The code points of TEXT decomposed (canonically ordered) under OPTIONS, and composed too where they ask for it.
std::u32string decompose(std::string_view text, utf8proc_option_t options) {
  std::u32string out(text.size() + 8, U'\0');
  const auto* s = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  const auto len = static_cast<utf8proc_ssize_t>(text.size());
  for (;;) {  // a decomposition can be longer than its UTF-8 source: grow and retry
    const utf8proc_ssize_t n = utf8proc_decompose(s, len, reinterpret_cast<utf8proc_int32_t*>(out.data()),
                                                  static_cast<utf8proc_ssize_t>(out.size()), options);
    if (n < 0) throw std::runtime_error(std::string("utf8proc: ") + utf8proc_errmsg(n));
    if (static_cast<size_t>(n) <= out.size()) {
      out.resize(static_cast<size_t>(n));
      break;
    }
    out.assign(static_cast<size_t>(n), U'\0');
  }
  if (options & UTF8PROC_COMPOSE) {
    const utf8proc_ssize_t n = utf8proc_normalize_utf32(reinterpret_cast<utf8proc_int32_t*>(out.data()),
                                                         static_cast<utf8proc_ssize_t>(out.size()), options);
    if (n < 0) throw std::runtime_error(std::string("utf8proc: ") + utf8proc_errmsg(n));
    out.resize(static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

const char* unicode_version() { return utf8proc_unicode_version(); }

std::vector<size_t> grapheme_lengths(std::string_view text) {
  std::vector<size_t> lengths;
  const auto* s = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_int32_t previous = -1, state = 0;
  size_t pos = 0, start = 0;
  while (pos < text.size()) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(s + pos, static_cast<utf8proc_ssize_t>(text.size() - pos), &cp);
    if (n <= 0) throw std::runtime_error("grapheme_lengths: the text is not UTF-8");
    if (previous >= 0 && utf8proc_grapheme_break_stateful(previous, cp, &state)) {
      lengths.push_back(pos - start);
      start = pos;
    }
    previous = cp;
    pos += static_cast<size_t>(n);
  }
  if (pos > start) lengths.push_back(pos - start);
  return lengths;
}

bool is_letter(char32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= U'a' && (cp | 0x20) <= U'z';
  const auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}

bool is_number(char32_t cp) {
  if (cp < 0x80) return cp >= U'0' && cp <= U'9';
  const auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO;
}

bool is_white_space(char32_t cp) {  // PropList.txt's White_Space: 25 code points, unchanged since Unicode 6.3
  if (cp < 0x80) return cp == U' ' || (cp >= 0x09 && cp <= 0x0D);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_python_space(char32_t cp) {
  if (category(cp) == UTF8PROC_CATEGORY_ZS) return true;
  const int bidi = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->bidi_class;
  return bidi == UTF8PROC_BIDI_CLASS_WS || bidi == UTF8PROC_BIDI_CLASS_B || bidi == UTF8PROC_BIDI_CLASS_S;
}

bool is_punctuation(char32_t cp) {
  const auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

bool is_nonspacing_mark(char32_t cp) { return cp >= 0x300 && category(cp) == UTF8PROC_CATEGORY_MN; }

bool is_control_or_format(char32_t cp) {
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF;
}

bool is_other_assigned(char32_t cp) {
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CO ||
         c == UTF8PROC_CATEGORY_CS;
}

bool is_space_separator(char32_t cp) { return category(cp) == UTF8PROC_CATEGORY_ZS; }

int combining_class(char32_t cp) {
  return cp < 0x300 ? 0 : utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->combining_class;
}

void append_lower(char32_t cp, std::u32string& out) {
  if (cp < 0x80) {
    out.push_back(cp >= U'A' && cp <= U'Z' ? cp + 32 : cp);
  } else if (cp == 0x130) {
    out += U"i\u0307";
  } else {
    out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
  }
}

std::string normalize(std::string_view text, NormalForm form) {
  bool ascii = true;  // ASCII is invariant under every form
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(text);
  std::u32string cps = decompose(text, options_of(form));
  const utf8proc_ssize_t n = utf8proc_reencode(reinterpret_cast<utf8proc_int32_t*>(cps.data()),
                                               static_cast<utf8proc_ssize_t>(cps.size()),
                                               static_cast<utf8proc_option_t>(UTF8PROC_STABLE));
  if (n < 0) throw std::runtime_error(std::string("utf8proc: ") + utf8proc_errmsg(n));
  // utf8proc_reencode wrote UTF-8 over the buffer's start (4 bytes per code point fit in place).
  return std::string(reinterpret_cast<const char*>(cps.data()), static_cast<size_t>(n));
}

std::u32string nfd_code_points(std::string_view text) { return decompose(text, options_of(NormalForm::NFD)); }

}  // namespace lmzoo::unicode
