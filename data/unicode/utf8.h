// UTF-8 validation of input text: lmzoo refuses bytes that are not UTF-8 instead of letting SentencePiece turn
// them into U+FFFD (which breaks the exact round trip without a word). Leaves out: any transcoding.
#pragma once
#include <cstdint>
#include <functional>
#include <istream>
#include <string>
#include <string_view>

namespace lmzoo {

// Byte offset of the first invalid UTF-8 sequence in TEXT (RFC 3629: no overlong forms, surrogates or code
// points above U+10FFFF; a sequence cut off by the end of TEXT is invalid), or std::string::npos if none.
size_t find_invalid_utf8(std::string_view text);

// Throws std::runtime_error "SOURCE is not UTF-8 text: invalid byte 0xNN at byte offset N[ (line L)] ..." when
// TEXT is not valid UTF-8; OFFSET is where TEXT starts in SOURCE, LINE (when > 0) the line it is on.
void require_utf8(std::string_view text, const std::string& source, int64_t offset = 0, int64_t line = 0);

// Calls on_line(line, number) for every line of IN (numbered from 1; the '\n' and a trailing '\r' removed), each
// checked to be UTF-8 first (require_utf8 with SOURCE, the line's byte offset and its number).
void for_each_utf8_line(std::istream& in, const std::string& source,
                        const std::function<void(const std::string& line, int64_t number)>& on_line);

// True for a path ending in .jsonl or .json (one JSON object per line); false for tab-separated text.
bool is_json_lines_path(const std::string& path);

// The message require_utf8 throws, for callers that report it as another kind of error.
std::string utf8_error(std::string_view text, size_t at, const std::string& source, int64_t offset = 0,
                       int64_t line = 0);

}  // namespace lmzoo
