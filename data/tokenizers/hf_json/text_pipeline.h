// The text side of a Hugging Face tokenizer.json pipeline: the normalizer and the pre-tokenizer, each built from its
// JSON object. Leaves out: the model (BPE, WordPiece, Unigram), decoders, post-processors and added tokens.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace lmzoo::hf {

// A field of tokenizer.json that lmzoo refuses or cannot read: "FIELD_PATH: reason" (e.g.
// "pre_tokenizer.pretokenizers[1].pattern.Regex: ..."); the loader prefixes the file's path.
struct TokenizerJsonError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A tokenizer.json "normalizer" (NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, BertNormalizer, Prepend, Replace,
// Strip, Precompiled, Sequence). normalize() takes and returns UTF-8.
class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(const std::string& text) const = 0;
};

// The normalizer described by J (FIELD_PATH names it in errors); nullptr when J is null (no normalizer).
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j, const std::string& field_path);

// One piece of text between pre-tokenizers. starts_input: the piece begins at byte 0 of the text the pipeline was
// given (Metaspace's prepend_scheme "first" prepends only there; after an added token it does not).
struct PreSplit {
  std::string text;
  bool starts_input = false;
};

// A tokenizer.json "pre_tokenizer" (ByteLevel, Split, Whitespace, WhitespaceSplit, BertPreTokenizer, Metaspace,
// Digits, Punctuation, Sequence). pre_tokenize() replaces each split by its parts, in order, dropping empty ones,
// exactly as the Rust tokenizers library's pre-tokenizer does (ByteLevel also maps bytes to its printable
// characters, Metaspace replaces spaces).
class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(std::vector<PreSplit>& splits) const = 0;
};

// The pre-tokenizer described by J; nullptr when J is null.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j, const std::string& field_path);

}  // namespace lmzoo::hf
