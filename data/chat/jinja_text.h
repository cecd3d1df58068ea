// Python's str operations on UTF-8 text for the chat-template interpreter: code points, str.isspace() whitespace,
// case mapping (utf8proc's simple mappings plus the ß -> SS full mapping), split, strip, title, isprintable.
// Leaves out: locale, the rest of SpecialCasing.txt (Python's full mappings of ligatures and Greek iota forms).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lmzoo::jinja {

std::u32string to_code_points(std::string_view text);
std::string to_utf8(std::u32string_view cps);
void append_code_point(char32_t cp, std::string& out);
bool is_ascii(std::string_view text);
int64_t code_point_count(std::string_view text);

bool is_space(char32_t cp);      // str.isspace()
bool is_printable(char32_t cp);  // str.isprintable(): not Cc, Cf, Cs, Co, Cn, Zl, Zp, or Zs other than ' '

std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);       // str.title()
std::string py_capitalize(std::string_view s);  // str.capitalize()

enum class StripSide { Both, Left, Right };
// str.strip(chars): CHARS absent strips whitespace.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, StripSide side);
// str.split(sep, maxsplit): SEP absent splits on runs of whitespace.
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> py_splitlines(std::string_view s);
std::string py_replace(std::string_view s, std::string_view old, std::string_view with, int64_t count);

}  // namespace lmzoo::jinja
