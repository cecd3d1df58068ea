// UTF-8 validation: a byte loop with an eight-bytes-at-a-time path over ASCII (GB/s, far above encoding speed).
#include "data/unicode/utf8.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace lmzoo {

size_t find_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    if (i + 8 <= n) {  // ASCII fast path
      uint64_t block;
      std::memcpy(&block, s + i, 8);
      if ((block & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t length;
    unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;   // overlong
      if (c == 0xED) high = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;   // overlong
      if (c == 0xF4) high = 0x8F;  // above U+10FFFF
    } else {
      return i;  // a continuation byte, C0/C1 (overlong) or F5..FF
    }
    if (i + length > n || s[i + 1] < low || s[i + 1] > high) return i;
    for (size_t k = 2; k < length; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
    }
    i += length;
  }
  return std::string::npos;
}

std::string utf8_error(std::string_view text, size_t at, const std::string& source, int64_t offset, int64_t line) {
  char byte[8];
  std::snprintf(byte, sizeof(byte), "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(text[at])));
  return source + " is not UTF-8 text: invalid byte " + byte + " at byte offset " +
         std::to_string(offset + static_cast<int64_t>(at)) + (line > 0 ? " (line " + std::to_string(line) + ")" : "") +
         "; convert it to UTF-8 first (e.g. iconv -f latin1 -t utf-8)";
}

void require_utf8(std::string_view text, const std::string& source, int64_t offset, int64_t line) {
  const size_t at = find_invalid_utf8(text);
  if (at != std::string::npos) throw std::runtime_error(utf8_error(text, at, source, offset, line));
}

void for_each_utf8_line(std::istream& in, const std::string& source,
                        const std::function<void(const std::string& line, int64_t number)>& on_line) {
  std::string line;
  int64_t offset = 0;  // of the line in the file
  for (int64_t number = 1; std::getline(in, line); ++number) {
    require_utf8(line, source, offset, number);
    offset += int64_t(line.size()) + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    on_line(line, number);
  }
}

bool is_json_lines_path(const std::string& path) {
  auto ends_with = [&](const std::string& suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".jsonl") || ends_with(".json");
}

}  // namespace lmzoo
