// Unicode properties and normalisation as the Rust tokenizers library has them: its categories, lower case and the
// code points its normalisation knows from the generated tables (data/unicode/unicode_tables.h); decompositions, compositions
// and class values from utf8proc, limited to those code points; bidi classes and grapheme clusters from utf8proc.
// Leaves out: utf8proc's other options (case folding, newline handling, stripping).
#include "data/unicode/unicode_props.h"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <utf8proc.h>

#include "data/unicode/unicode_tables.h"
#include "data/unicode/unicode_text.h"

namespace lmzoo::unicode {

namespace {

const utf8proc_property_t* property(char32_t cp) { return utf8proc_get_property(static_cast<utf8proc_int32_t>(cp)); }

utf8proc_category_t category(char32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)); }

// Appends CP fully decomposed (COMPAT: compatibility mappings too) where the library's NFD (NFKD) decomposes it.
void append_decomposed(char32_t cp, bool compat, std::u32string& out) {
  const tables::RangeSet& known = compat ? tables::kCompatibility : tables::kCanonical;
  if (cp < 0xA0 || !known.contains(cp)) {  // nothing below U+00A0 decomposes
    out.push_back(cp);
    return;
  }
  utf8proc_int32_t buf[32];  // the longest decomposition (U+FDFA under NFKD) has 18 code points
  int boundclass = 0;
  const auto options = static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0));
  const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 32, options, &boundclass);
  if (n < 0 || n > 32) throw std::runtime_error("utf8proc cannot decompose U+" + std::to_string(uint32_t(cp)));
  for (utf8proc_ssize_t i = 0; i < n; ++i) out.push_back(static_cast<char32_t>(buf[i]));
}

// TEXT decomposed, each run of non-starters stably sorted by combining_class().
std::u32string decompose(std::string_view text, bool compat) {
  std::u32string out;
  out.reserve(text.size() + 8);
  for (char32_t cp : utf8_to_code_points(text)) append_decomposed(cp, compat, out);
  auto by_class = [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); };
  for (size_t i = 0; i < out.size();) {
    if (combining_class(out[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < out.size() && combining_class(out[j]) != 0) ++j;
    if (j - i > 1) std::stable_sort(out.begin() + i, out.begin() + j, by_class);
    i = j;
  }
  return out;
}

// The pairs utf8proc composes into a code point the library's tables do not decompose (U+11935 U+11930 into
// U+11938 with utf8proc 2.8), sorted.
const std::vector<std::pair<char32_t, char32_t>>& unknown_compositions() {
  static const std::vector<std::pair<char32_t, char32_t>> pairs = [] {
    std::vector<std::pair<char32_t, char32_t>> out;
    for (char32_t cp = 0xA0; cp <= 0x10FFFF; ++cp) {
      const utf8proc_property_t* p = property(cp);
      if (p->decomp_seqindex == UINT16_MAX || p->decomp_type != 0 || p->comp_exclusion) continue;
      if ((cp >= 0xD800 && cp <= 0xDFFF) || tables::kCanonical.contains(cp)) continue;
      utf8proc_int32_t buf[32];
      int boundclass = 0;
      const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 32,
                                                         UTF8PROC_DECOMPOSE, &boundclass);
      if (n == 2) out.emplace_back(static_cast<char32_t>(buf[0]), static_cast<char32_t>(buf[1]));
    }
    std::sort(out.begin(), out.end());
    return out;
  }();
  return pairs;
}

// Composes S (decomposed and ordered) with utf8proc's compositions, in pieces cut where the library would compose
// differently: before a code point that utf8proc gives a class above 0 and the library takes for a starter (it
// blocks what follows from the starter before it), and between the two halves of a composite the library does not
// know. Leaves out: such a second half that is itself a mark (none in utf8proc 2.8 or Unicode 16).
void compose(std::u32string& s) {
  std::u32string out;
  out.reserve(s.size());
  size_t start = 0, last_starter = std::u32string::npos;
  auto flush = [&](size_t end) {
    std::u32string piece = s.substr(start, end - start);
    const utf8proc_ssize_t n =
        utf8proc_normalize_utf32(reinterpret_cast<utf8proc_int32_t*>(piece.data()),
                                 static_cast<utf8proc_ssize_t>(piece.size()),
                                 static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    if (n < 0) throw std::runtime_error(std::string("utf8proc: ") + utf8proc_errmsg(n));
    out.append(piece, 0, static_cast<size_t>(n));
    start = end;
  };
  const auto& unknown = unknown_compositions();
  for (size_t i = 0; i < s.size(); ++i) {
    const bool starter = combining_class(s[i]) == 0;
    bool cut = starter && property(s[i])->combining_class != 0;
    if (!cut && last_starter != std::u32string::npos && !unknown.empty()) {
      cut = std::binary_search(unknown.begin(), unknown.end(), std::make_pair(s[last_starter], s[i]));
    }
    if (cut && i > start) flush(i);
    if (starter) last_starter = i;
  }
  flush(s.size());
  s.swap(out);
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
  return tables::kRegexLetter.contains(cp);
}

bool is_number(char32_t cp) {
  if (cp < 0x80) return cp >= U'0' && cp <= U'9';
  return tables::kRegexNumber.contains(cp);
}

bool is_numeric(char32_t cp) {
  if (cp < 0x80) return cp >= U'0' && cp <= U'9';
  return tables::kRustNumeric.contains(cp);
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

bool is_bert_punctuation(char32_t cp) {
  if (cp < 0x80) {  // Rust's is_ascii_punctuation()
    return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
  }
  return tables::kBertPunctuation.contains(cp);
}

bool is_nonspacing_mark(char32_t cp) { return cp >= 0x300 && tables::kNonspacingMark.contains(cp); }

bool is_combining_mark(char32_t cp) { return cp >= 0x300 && tables::kCombiningMark.contains(cp); }

bool is_control_or_format(char32_t cp) {
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF;
}

bool is_other_assigned(char32_t cp) {
  if (cp < 0x80) return cp < 0x20 || cp == 0x7F;
  return tables::kOther.contains(cp);
}

bool is_space_separator(char32_t cp) { return category(cp) == UTF8PROC_CATEGORY_ZS; }

int combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  const int c = property(cp)->combining_class;
  return c != 0 && tables::kNonzeroCcc.contains(cp) ? c : 0;
}

void append_lower(char32_t cp, std::u32string& out) {
  if (cp < 0x80) {
    out.push_back(cp >= U'A' && cp <= U'Z' ? cp + 32 : cp);
  } else if (cp == 0x130) {
    out += U"i\u0307";
  } else {
    out.push_back(tables::kLower.map(cp));
  }
}

std::string normalize(std::string_view text, NormalForm form) {
  bool ascii = true;  // ASCII is invariant under every form
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(text);
  std::u32string cps = decompose(text, form == NormalForm::NFKC || form == NormalForm::NFKD);
  if (form == NormalForm::NFC || form == NormalForm::NFKC) compose(cps);
  return code_points_to_utf8(cps);
}

std::u32string nfd_code_points(std::string_view text) { return decompose(text, false); }

}  // namespace lmzoo::unicode
