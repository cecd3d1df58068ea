// tokenizer.json "decoder"s (ByteLevel, WordPiece, Metaspace, ByteFallback, Fuse, Strip, Replace with a String
// pattern, Sequence): tokens back to text as the Rust tokenizers library's decode_chain does. Leaves out: CTC,
// BPEDecoder and Replace with a Regex pattern (refused by name).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace lmzoo::hf {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Rewrites the tokens in place (a decoder may also fuse them into fewer); decode joins the result.
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

// The decoder J describes (FIELD_PATH names it in errors); nullptr for null.
std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j, const std::string& field_path);

// Rust's String::from_utf8_lossy: each maximal invalid subsequence becomes U+FFFD.
std::string utf8_lossy(const std::string& bytes);

// The byte GPT-2's byte-level alphabet character CP stands for, or -1.
int byte_level_char_to_byte(char32_t cp);

}  // namespace lmzoo::hf
