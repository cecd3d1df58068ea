// Python's str operations on UTF-8 text (jinja_text.h): code points through data/unicode_text, categories and
// simple case mappings from utf8proc. Leaves out: Python's multi-character case mappings other than ß.
#include "data/chat/jinja_text.h"

#include <utf8proc.h>

#include <algorithm>

#include "data/chat/jinja_value.h"
#include "data/unicode/unicode_props.h"
#include "data/unicode/unicode_text.h"

namespace lmzoo::jinja {

std::u32string to_code_points(std::string_view text) {
  try {
    return lmzoo::utf8_to_code_points(text, "chat template text");
  } catch (const std::runtime_error& e) {
    throw Error(ErrorKind::Type, e.what());
  }
}

void append_code_point(char32_t cp, std::string& out) { lmzoo::append_utf8(cp, out); }

std::string to_utf8(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append_code_point(cp, out);
  return out;
}

bool is_ascii(std::string_view text) {
  for (unsigned char c : text)
    if (c >= 0x80) return false;
  return true;
}

int64_t code_point_count(std::string_view text) {
  int64_t n = 0;
  for (unsigned char c : text)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

bool is_space(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
  return lmzoo::unicode::is_python_space(cp);
}

bool is_printable(char32_t cp) {
  if (cp == ' ') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

namespace {

char32_t simple_upper(char32_t cp) { return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(cp))); }
char32_t simple_lower(char32_t cp) { return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))); }
char32_t simple_title(char32_t cp) { return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(cp))); }

// Python's (Unicode 14's SpecialCasing.txt) multi-character upper-case mappings, with each code point's title case.
struct FullCase {
  char32_t cp;
  const char32_t* upper;
  const char32_t* title;
};
const FullCase kFullCase[] = {
    {0x00DF, U"\U00000053\U00000053", U"\U00000053\U00000073"},
    {0x0149, U"\U000002bc\U0000004e", U"\U000002bc\U0000004e"},
    {0x01F0, U"\U0000004a\U0000030c", U"\U0000004a\U0000030c"},
    {0x0390, U"\U00000399\U00000308\U00000301", U"\U00000399\U00000308\U00000301"},
    {0x03B0, U"\U000003a5\U00000308\U00000301", U"\U000003a5\U00000308\U00000301"},
    {0x0587, U"\U00000535\U00000552", U"\U00000535\U00000582"},
    {0x1E96, U"\U00000048\U00000331", U"\U00000048\U00000331"},
    {0x1E97, U"\U00000054\U00000308", U"\U00000054\U00000308"},
    {0x1E98, U"\U00000057\U0000030a", U"\U00000057\U0000030a"},
    {0x1E99, U"\U00000059\U0000030a", U"\U00000059\U0000030a"},
    {0x1E9A, U"\U00000041\U000002be", U"\U00000041\U000002be"},
    {0x1F50, U"\U000003a5\U00000313", U"\U000003a5\U00000313"},
    {0x1F52, U"\U000003a5\U00000313\U00000300", U"\U000003a5\U00000313\U00000300"},
    {0x1F54, U"\U000003a5\U00000313\U00000301", U"\U000003a5\U00000313\U00000301"},
    {0x1F56, U"\U000003a5\U00000313\U00000342", U"\U000003a5\U00000313\U00000342"},
    {0x1F80, U"\U00001f08\U00000399", U"\U00001f88"},
    {0x1F81, U"\U00001f09\U00000399", U"\U00001f89"},
    {0x1F82, U"\U00001f0a\U00000399", U"\U00001f8a"},
    {0x1F83, U"\U00001f0b\U00000399", U"\U00001f8b"},
    {0x1F84, U"\U00001f0c\U00000399", U"\U00001f8c"},
    {0x1F85, U"\U00001f0d\U00000399", U"\U00001f8d"},
    {0x1F86, U"\U00001f0e\U00000399", U"\U00001f8e"},
    {0x1F87, U"\U00001f0f\U00000399", U"\U00001f8f"},
    {0x1F88, U"\U00001f08\U00000399", U"\U00001f88"},
    {0x1F89, U"\U00001f09\U00000399", U"\U00001f89"},
    {0x1F8A, U"\U00001f0a\U00000399", U"\U00001f8a"},
    {0x1F8B, U"\U00001f0b\U00000399", U"\U00001f8b"},
    {0x1F8C, U"\U00001f0c\U00000399", U"\U00001f8c"},
    {0x1F8D, U"\U00001f0d\U00000399", U"\U00001f8d"},
    {0x1F8E, U"\U00001f0e\U00000399", U"\U00001f8e"},
    {0x1F8F, U"\U00001f0f\U00000399", U"\U00001f8f"},
    {0x1F90, U"\U00001f28\U00000399", U"\U00001f98"},
    {0x1F91, U"\U00001f29\U00000399", U"\U00001f99"},
    {0x1F92, U"\U00001f2a\U00000399", U"\U00001f9a"},
    {0x1F93, U"\U00001f2b\U00000399", U"\U00001f9b"},
    {0x1F94, U"\U00001f2c\U00000399", U"\U00001f9c"},
    {0x1F95, U"\U00001f2d\U00000399", U"\U00001f9d"},
    {0x1F96, U"\U00001f2e\U00000399", U"\U00001f9e"},
    {0x1F97, U"\U00001f2f\U00000399", U"\U00001f9f"},
    {0x1F98, U"\U00001f28\U00000399", U"\U00001f98"},
    {0x1F99, U"\U00001f29\U00000399", U"\U00001f99"},
    {0x1F9A, U"\U00001f2a\U00000399", U"\U00001f9a"},
    {0x1F9B, U"\U00001f2b\U00000399", U"\U00001f9b"},
    {0x1F9C, U"\U00001f2c\U00000399", U"\U00001f9c"},
    {0x1F9D, U"\U00001f2d\U00000399", U"\U00001f9d"},
    {0x1F9E, U"\U00001f2e\U00000399", U"\U00001f9e"},
    {0x1F9F, U"\U00001f2f\U00000399", U"\U00001f9f"},
    {0x1FA0, U"\U00001f68\U00000399", U"\U00001fa8"},
    {0x1FA1, U"\U00001f69\U00000399", U"\U00001fa9"},
    {0x1FA2, U"\U00001f6a\U00000399", U"\U00001faa"},
    {0x1FA3, U"\U00001f6b\U00000399", U"\U00001fab"},
    {0x1FA4, U"\U00001f6c\U00000399", U"\U00001fac"},
    {0x1FA5, U"\U00001f6d\U00000399", U"\U00001fad"},
    {0x1FA6, U"\U00001f6e\U00000399", U"\U00001fae"},
    {0x1FA7, U"\U00001f6f\U00000399", U"\U00001faf"},
    {0x1FA8, U"\U00001f68\U00000399", U"\U00001fa8"},
    {0x1FA9, U"\U00001f69\U00000399", U"\U00001fa9"},
    {0x1FAA, U"\U00001f6a\U00000399", U"\U00001faa"},
    {0x1FAB, U"\U00001f6b\U00000399", U"\U00001fab"},
    {0x1FAC, U"\U00001f6c\U00000399", U"\U00001fac"},
    {0x1FAD, U"\U00001f6d\U00000399", U"\U00001fad"},
    {0x1FAE, U"\U00001f6e\U00000399", U"\U00001fae"},
    {0x1FAF, U"\U00001f6f\U00000399", U"\U00001faf"},
    {0x1FB2, U"\U00001fba\U00000399", U"\U00001fba\U00000345"},
    {0x1FB3, U"\U00000391\U00000399", U"\U00001fbc"},
    {0x1FB4, U"\U00000386\U00000399", U"\U00000386\U00000345"},
    {0x1FB6, U"\U00000391\U00000342", U"\U00000391\U00000342"},
    {0x1FB7, U"\U00000391\U00000342\U00000399", U"\U00000391\U00000342\U00000345"},
    {0x1FBC, U"\U00000391\U00000399", U"\U00001fbc"},
    {0x1FC2, U"\U00001fca\U00000399", U"\U00001fca\U00000345"},
    {0x1FC3, U"\U00000397\U00000399", U"\U00001fcc"},
    {0x1FC4, U"\U00000389\U00000399", U"\U00000389\U00000345"},
    {0x1FC6, U"\U00000397\U00000342", U"\U00000397\U00000342"},
    {0x1FC7, U"\U00000397\U00000342\U00000399", U"\U00000397\U00000342\U00000345"},
    {0x1FCC, U"\U00000397\U00000399", U"\U00001fcc"},
    {0x1FD2, U"\U00000399\U00000308\U00000300", U"\U00000399\U00000308\U00000300"},
    {0x1FD3, U"\U00000399\U00000308\U00000301", U"\U00000399\U00000308\U00000301"},
    {0x1FD6, U"\U00000399\U00000342", U"\U00000399\U00000342"},
    {0x1FD7, U"\U00000399\U00000308\U00000342", U"\U00000399\U00000308\U00000342"},
    {0x1FE2, U"\U000003a5\U00000308\U00000300", U"\U000003a5\U00000308\U00000300"},
    {0x1FE3, U"\U000003a5\U00000308\U00000301", U"\U000003a5\U00000308\U00000301"},
    {0x1FE4, U"\U000003a1\U00000313", U"\U000003a1\U00000313"},
    {0x1FE6, U"\U000003a5\U00000342", U"\U000003a5\U00000342"},
    {0x1FE7, U"\U000003a5\U00000308\U00000342", U"\U000003a5\U00000308\U00000342"},
    {0x1FF2, U"\U00001ffa\U00000399", U"\U00001ffa\U00000345"},
    {0x1FF3, U"\U000003a9\U00000399", U"\U00001ffc"},
    {0x1FF4, U"\U0000038f\U00000399", U"\U0000038f\U00000345"},
    {0x1FF6, U"\U000003a9\U00000342", U"\U000003a9\U00000342"},
    {0x1FF7, U"\U000003a9\U00000342\U00000399", U"\U000003a9\U00000342\U00000345"},
    {0x1FFC, U"\U000003a9\U00000399", U"\U00001ffc"},
    {0xFB00, U"\U00000046\U00000046", U"\U00000046\U00000066"},
    {0xFB01, U"\U00000046\U00000049", U"\U00000046\U00000069"},
    {0xFB02, U"\U00000046\U0000004c", U"\U00000046\U0000006c"},
    {0xFB03, U"\U00000046\U00000046\U00000049", U"\U00000046\U00000066\U00000069"},
    {0xFB04, U"\U00000046\U00000046\U0000004c", U"\U00000046\U00000066\U0000006c"},
    {0xFB05, U"\U00000053\U00000054", U"\U00000053\U00000074"},
    {0xFB06, U"\U00000053\U00000054", U"\U00000053\U00000074"},
    {0xFB13, U"\U00000544\U00000546", U"\U00000544\U00000576"},
    {0xFB14, U"\U00000544\U00000535", U"\U00000544\U00000565"},
    {0xFB15, U"\U00000544\U0000053b", U"\U00000544\U0000056b"},
    {0xFB16, U"\U0000054e\U00000546", U"\U0000054e\U00000576"},
    {0xFB17, U"\U00000544\U0000053d", U"\U00000544\U0000056d"},
};

const FullCase* full_case(char32_t cp) {
  if (cp < 0xDF) return nullptr;
  const auto end = std::end(kFullCase);
  const auto it = std::lower_bound(std::begin(kFullCase), end, cp, [](const FullCase& f, char32_t c) { return f.cp < c; });
  return (it != end && it->cp == cp) ? &*it : nullptr;
}

void append_upper(char32_t cp, std::u32string& out) {
  if (const FullCase* f = full_case(cp)) {
    out += f->upper;
    return;
  }
  out += simple_upper(cp);
}

void append_title(char32_t cp, std::u32string& out) {
  if (const FullCase* f = full_case(cp)) {
    out += f->title;
    return;
  }
  out += simple_title(cp);
}

// Unicode's Case_Ignorable, near enough: marks, format characters, modifiers and the word-internal punctuation.
bool is_case_ignorable(char32_t cp) {
  switch (cp) {
    case '\'':
    case '.':
    case ':':
    case '^':
    case '`':
    case 0x00A8:
    case 0x00AD:
    case 0x00AF:
    case 0x00B4:
    case 0x00B7:
    case 0x00B8:
    case 0x2018:
    case 0x2019:
    case 0x2024:
    case 0x2027: return true;
    default: break;
  }
  const auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_ME || c == UTF8PROC_CATEGORY_CF ||
         c == UTF8PROC_CATEGORY_LM || c == UTF8PROC_CATEGORY_SK;
}

void append_lower(char32_t cp, std::u32string& out) {
  if (cp == U'\u0130') {  // İ lower-cases to i + combining dot above
    out += U"i\u0307";
    return;
  }
  out += simple_lower(cp);
}

bool is_cased(char32_t cp) {
  const auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT ||
         simple_upper(cp) != cp || simple_lower(cp) != cp;
}

}  // namespace

std::string py_upper(std::string_view s) {
  if (is_ascii(s)) {
    std::string out(s);
    for (char& c : out)
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    return out;
  }
  std::u32string out;
  for (char32_t cp : to_code_points(s)) append_upper(cp, out);
  return to_utf8(out);
}

// Capital sigma at K of CPS lower-cases to final ς at the end of a word (Unicode's Final_Sigma), else to σ.
char32_t lower_sigma(const std::u32string& cps, size_t k) {
  size_t j = k;
  bool cased_before = false;
  while (j > 0) {
    --j;
    if (is_case_ignorable(cps[j])) continue;
    cased_before = is_cased(cps[j]);
    break;
  }
  bool cased_after = false;
  for (j = k + 1; j < cps.size(); ++j) {
    if (is_case_ignorable(cps[j])) continue;
    cased_after = is_cased(cps[j]);
    break;
  }
  return (cased_before && !cased_after) ? U'\u03C2' : U'\u03C3';
}

// The lower case of CPS[K] in its context, appended to OUT (Python's lower_ucs4).
void append_lower_at(const std::u32string& cps, size_t k, std::u32string& out) {
  if (cps[k] == U'\u03A3')
    out += lower_sigma(cps, k);
  else
    append_lower(cps[k], out);
}

std::u32string lower_code_points(const std::u32string& cps) {
  std::u32string out;
  out.reserve(cps.size());
  for (size_t k = 0; k < cps.size(); ++k) append_lower_at(cps, k, out);
  return out;
}

std::string py_lower(std::string_view s) {
  if (is_ascii(s)) {
    std::string out(s);
    for (char& c : out)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    return out;
  }
  return to_utf8(lower_code_points(to_code_points(s)));
}

std::string py_title(std::string_view s) {
  const std::u32string cps = to_code_points(s);
  std::u32string out;
  bool previous_cased = false;
  for (size_t k = 0; k < cps.size(); ++k) {
    if (previous_cased)
      append_lower_at(cps, k, out);
    else
      append_title(cps[k], out);
    previous_cased = is_cased(cps[k]);
  }
  return to_utf8(out);
}

std::string py_capitalize(std::string_view s) {
  const std::u32string cps = to_code_points(s);
  std::u32string out;
  for (size_t k = 0; k < cps.size(); ++k) {
    if (k == 0)
      append_title(cps[0], out);
    else
      append_lower_at(cps, k, out);
  }
  return to_utf8(out);
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, StripSide side) {
  const std::u32string cps = to_code_points(s);
  const std::u32string set = chars ? to_code_points(*chars) : std::u32string();
  auto strippable = [&](char32_t cp) { return chars ? set.find(cp) != std::u32string::npos : is_space(cp); };
  size_t begin = 0, end = cps.size();
  if (side != StripSide::Right)
    while (begin < end && strippable(cps[begin])) ++begin;
  if (side != StripSide::Left)
    while (end > begin && strippable(cps[end - 1])) --end;
  return to_utf8(std::u32string_view(cps).substr(begin, end - begin));
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> parts;
  if (sep) {
    if (sep->empty()) throw Error(ErrorKind::Type, "empty separator");
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      const size_t at = s.find(*sep, pos);
      if (at == std::string_view::npos) break;
      parts.emplace_back(s.substr(pos, at - pos));
      pos = at + sep->size();
    }
    parts.emplace_back(s.substr(pos));
    return parts;
  }
  const std::u32string cps = to_code_points(s);
  size_t i = 0;
  const size_t n = cps.size();
  while (true) {
    while (i < n && is_space(cps[i])) ++i;
    if (i >= n) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      parts.push_back(to_utf8(std::u32string_view(cps).substr(i)));  // the rest keeps its trailing whitespace
      break;
    }
    size_t j = i;
    while (j < n && !is_space(cps[j])) ++j;
    parts.push_back(to_utf8(std::u32string_view(cps).substr(i, j - i)));
    i = j;
  }
  return parts;
}

std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  if (maxsplit < 0) return py_split(s, sep, maxsplit);
  std::vector<std::string> parts;
  if (sep) {
    if (sep->empty()) throw Error(ErrorKind::Type, "empty separator");
    size_t end = s.size();
    while (static_cast<int64_t>(parts.size()) < maxsplit) {
      if (end < sep->size()) break;
      const size_t at = s.rfind(*sep, end - sep->size());
      if (at == std::string_view::npos) break;
      parts.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
    parts.emplace_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
    return parts;
  }
  const std::u32string cps = to_code_points(s);
  size_t j = cps.size();
  while (true) {
    while (j > 0 && is_space(cps[j - 1])) --j;
    if (j == 0) break;
    if (static_cast<int64_t>(parts.size()) == maxsplit) {
      parts.push_back(to_utf8(std::u32string_view(cps).substr(0, j)));  // the rest keeps its leading whitespace
      break;
    }
    size_t i = j;
    while (i > 0 && !is_space(cps[i - 1])) --i;
    parts.push_back(to_utf8(std::u32string_view(cps).substr(i, j - i)));
    j = i;
  }
  std::reverse(parts.begin(), parts.end());
  return parts;
}

std::vector<std::string> py_splitlines(std::string_view s) {
  const std::u32string cps = to_code_points(s);
  std::vector<std::string> lines;
  size_t start = 0, i = 0;
  auto is_break = [](char32_t c) {
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
           c == 0x2028 || c == 0x2029;
  };
  while (i < cps.size()) {
    if (is_break(cps[i])) {
      lines.push_back(to_utf8(std::u32string_view(cps).substr(start, i - start)));
      if (cps[i] == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
      start = ++i;
    } else {
      ++i;
    }
  }
  if (start < cps.size()) lines.push_back(to_utf8(std::u32string_view(cps).substr(start)));
  return lines;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view with, int64_t count) {
  std::string out;
  if (old.empty()) {  // Python inserts WITH before every code point and at the end
    const std::u32string cps = to_code_points(s);
    int64_t done = 0;
    for (char32_t cp : cps) {
      if (count < 0 || done < count) {
        out += with;
        ++done;
      }
      append_code_point(cp, out);
    }
    if (count < 0 || done < count) out += with;
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t at = s.find(old, pos);
    if (at == std::string_view::npos) break;
    out.append(s.substr(pos, at - pos));
    out.append(with);
    pos = at + old.size();
    ++done;
  }
  out.append(s.substr(pos));
  return out;
}

}  // namespace lmzoo::jinja
