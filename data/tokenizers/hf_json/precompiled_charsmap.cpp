// The Precompiled normalizer's trie walk (Darts-clone unit layout: label, has_leaf and offset bits) and its
// grapheme-by-grapheme replacement loop.
#include "data/tokenizers/hf_json/precompiled_charsmap.h"

#include <stdexcept>

#include "data/unicode/unicode_props.h"
#include "data/unicode/utf8.h"

namespace lmzoo::hf {

namespace {

bool has_leaf(uint32_t unit) { return ((unit >> 8) & 1) == 1; }
uint32_t value(uint32_t unit) { return unit & ((1u << 31) - 1); }
uint32_t label(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
uint32_t offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

uint32_t read_u32(std::string_view bytes, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + size_t(i)]);
  return v;
}

}  // namespace

PrecompiledCharsmap::PrecompiledCharsmap(std::string_view blob) {
  if (blob.size() < 4) throw std::runtime_error("the charsmap is shorter than its 4-byte trie size");
  const uint32_t trie_bytes = read_u32(blob, 0);
  if (trie_bytes > blob.size() - 4 || trie_bytes % 4 != 0) {
    throw std::runtime_error("the charsmap's trie size " + std::to_string(trie_bytes) + " does not fit its " +
                             std::to_string(blob.size()) + " bytes");
  }
  if (trie_bytes == 0) throw std::runtime_error("the charsmap's trie is empty");
  for (size_t at = 4; at < 4 + size_t(trie_bytes); at += 4) units_.push_back(read_u32(blob, at));
  pool_ = std::string(blob.substr(4 + size_t(trie_bytes)));
  if (find_invalid_utf8(pool_) != std::string::npos) throw std::runtime_error("the charsmap's replacements are not UTF-8");
}

std::optional<std::string_view> PrecompiledCharsmap::transform(std::string_view chunk) const {
  size_t node = offset(units_[0]);
  for (const char ch : chunk) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) return std::nullopt;
    node ^= c;
    if (node >= units_.size()) return std::nullopt;
    const uint32_t unit = units_[node];
    if (label(unit) != c) return std::nullopt;
    node ^= offset(unit);
    if (node >= units_.size()) return std::nullopt;
    if (has_leaf(unit)) {
      const size_t start = value(units_[node]);
      if (start > pool_.size()) return std::nullopt;
      const size_t end = pool_.find('\0', start);
      return std::string_view(pool_).substr(start, (end == std::string::npos ? pool_.size() : end) - start);
    }
  }
  return std::nullopt;
}

std::string PrecompiledCharsmap::normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  for (const size_t length : unicode::grapheme_lengths(text)) {
    const std::string_view grapheme = text.substr(pos, length);
    pos += length;
    if (length < 6) {
      if (const auto replacement = transform(grapheme)) {
        out += *replacement;
        continue;
      }
    }
    for (size_t at = 0; at < grapheme.size();) {
      size_t n = 1;  // the UTF-8 length of the character at AT
      const auto lead = static_cast<unsigned char>(grapheme[at]);
      if (lead >= 0xF0) n = 4;
      else if (lead >= 0xE0) n = 3;
      else if (lead >= 0xC0) n = 2;
      const std::string_view ch = grapheme.substr(at, n);
      at += n;
      if (const auto replacement = transform(ch)) out += *replacement;
      else out += ch;
    }
  }
  return out;
}

}  // namespace lmzoo::hf
