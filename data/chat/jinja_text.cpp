// Python's str operations on UTF-8 text (jinja_text.h): code points through data/unicode_text, categories and
// simple case mappings from utf8proc. Leaves out: Python's multi-character case mappings other than ß.
#include "data/chat/jinja_text.h"

#include <utf8proc.h>

#include <algorithm>

#include "data/chat/jinja_value.h"
#include "data/unicode_props.h"
#include "data/unicode_text.h"

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

void append_upper(char32_t cp, std::u32string& out) {
  if (cp == U'\u00DF') {  // ß: the one full mapping chat text meets often
    out += U"SS";
    return;
  }
  out += simple_upper(cp);
}

void append_title(char32_t cp, std::u32string& out) {
  if (cp == U'\u00DF') {
    out += U"Ss";
    return;
  }
  out += simple_title(cp);
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

std::string py_lower(std::string_view s) {
  if (is_ascii(s)) {
    std::string out(s);
    for (char& c : out)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    return out;
  }
  std::u32string out;
  for (char32_t cp : to_code_points(s)) append_lower(cp, out);
  return to_utf8(out);
}

std::string py_title(std::string_view s) {
  std::u32string out;
  bool previous_cased = false;
  for (char32_t cp : to_code_points(s)) {
    if (previous_cased)
      append_lower(cp, out);
    else
      append_title(cp, out);
    previous_cased = is_cased(cp);
  }
  return to_utf8(out);
}

std::string py_capitalize(std::string_view s) {
  std::u32string out;
  bool first = true;
  for (char32_t cp : to_code_points(s)) {
    if (first)
      append_title(cp, out);
    else
      append_lower(cp, out);
    first = false;
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
      size_t end = n;
      while (end > i && is_space(cps[end - 1])) --end;
      parts.push_back(to_utf8(std::u32string_view(cps).substr(i, end - i)));
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
      size_t begin = 0;
      while (begin < j && is_space(cps[begin])) ++begin;
      parts.push_back(to_utf8(std::u32string_view(cps).substr(begin, j - begin)));
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
