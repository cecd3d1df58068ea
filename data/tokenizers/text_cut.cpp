// Searching a text for the cut a tokenizer allows nearest a length limit, and the character-boundary fallback.
#include "data/tokenizers/text_cut.h"

#include <algorithm>

namespace lmzoo {

TextCut find_cut(std::string_view text, size_t limit, const CutAt& cut_at) {
  limit = std::min(limit, text.size());
  for (size_t pos = limit; pos > 0; --pos) {
    if (pos == text.size()) continue;
    const TextCut cut = cut_at(text, pos);
    if (cut.found()) return cut;
  }
  for (size_t pos = limit + 1; pos < text.size(); ++pos) {
    const TextCut cut = cut_at(text, pos);
    if (cut.found()) return cut;
  }
  return {};
}

TextCut character_cut(std::string_view text, size_t limit) {
  const auto continuation = [&](size_t pos) { return (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80; };
  limit = std::min(limit, text.size());
  size_t pos = limit;
  while (pos > 0 && pos < text.size() && continuation(pos)) --pos;
  if (pos == 0) {
    pos = limit;
    while (pos < text.size() && continuation(pos)) ++pos;
  }
  return {pos, pos};
}

}  // namespace lmzoo
