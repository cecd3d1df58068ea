// UTF-8 validation of input text: lmzoo refuses bytes that are not UTF-8 instead of letting SentencePiece turn
// them into U+FFFD (which breaks the exact round trip without a word). Leaves out: any transcoding.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace lmzoo {

// Byte offset of the first invalid UTF-8 sequence in TEXT (RFC 3629: no overlong forms, surrogates or code
// points above U+10FFFF; a sequence cut off by the end of TEXT is invalid), or std::string::npos if none.
size_t find_invalid_utf8(std::string_view text);

// Throws std::runtime_error "SOURCE is not UTF-8 text: invalid byte 0xNN at byte offset N[ (line L)] ..." when
// TEXT is not valid UTF-8; OFFSET is where TEXT starts in SOURCE, LINE (when > 0) the line it is on.
void require_utf8(std::string_view text, const std::string& source, int64_t offset = 0, int64_t line = 0);

// The message require_utf8 throws, for callers that report it as another kind of error.
std::string utf8_error(std::string_view text, size_t at, const std::string& source, int64_t offset = 0,
                       int64_t line = 0);

}  // namespace lmzoo
