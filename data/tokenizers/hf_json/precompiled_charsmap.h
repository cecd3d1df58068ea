// SentencePiece's precompiled normalisation rules (a Darts-clone double-array trie over UTF-8 keys and a pool of
// NUL-terminated replacements), applied as the Rust tokenizers' Precompiled normalizer does: per grapheme cluster,
// the whole cluster first when it is under 6 bytes, else each character, each replaced by the rule of its SHORTEST
// matching prefix. Leaves out: sentencepiece's own longest-match walk (data/tokenizers/tokenizer_spm.cpp runs the library).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lmzoo::hf {

class PrecompiledCharsmap {
 public:
  // BLOB: a uint32 (little-endian) trie size in bytes, the trie's uint32 units, then the replacement pool.
  // Throws std::runtime_error naming what is malformed (as Rust's Precompiled::from refuses it).
  explicit PrecompiledCharsmap(std::string_view blob);

  std::string normalize(std::string_view text) const;

 private:
  // The replacement of the shortest rule that is a prefix of CHUNK, or nullopt for none.
  std::optional<std::string_view> transform(std::string_view chunk) const;

  std::vector<uint32_t> units_;
  std::string pool_;
};

}  // namespace lmzoo::hf
