// GPT-2's byte-level BPE tokenizer as Hugging Face and OpenAI ship it (vocab.json + merges.txt, or encoder.json +
// vocab.bpe): pre-tokenising (data/tokenizers/gpt2_byte_level.h), merges by rank. Leaves out: training, offsets.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/tokenizers/gpt2_byte_level.h"  // gpt2_pretokenize, gpt2_byte_to_char
#include "data/unicode/unicode_text.h"      // HfTokenizerError

namespace lmzoo {

class Gpt2BpeTokenizer {
 public:
  // DIR/vocab.json + DIR/merges.txt (Hugging Face) or DIR/encoder.json + DIR/vocab.bpe (OpenAI).
  static Gpt2BpeTokenizer load(const std::string& dir);
  static Gpt2BpeTokenizer load(const std::string& vocab_path, const std::string& merges_path);

  // Token ids of TEXT (UTF-8; throws HfTokenizerError otherwise). With ALLOW_SPECIAL, the special tokens of the
  // vocabulary (<|endoftext|>) written in TEXT become their ids; without it they are encoded as plain text.
  std::vector<int64_t> encode(const std::string& text, bool allow_special = false) const;
  // The bytes the ids stand for, joined. Exact inverse of encode; ids cut inside a UTF-8 sequence give those
  // bytes as they are (not U+FFFD). Throws HfTokenizerError for an id outside the vocabulary.
  std::string decode(const std::vector<int64_t>& ids) const;

  int64_t vocab_size() const { return static_cast<int64_t>(pieces_.size()); }  // largest id + 1
  // The vocabulary's spelling of ID (byte-level characters, e.g. "\u0120the" for " the"); throws if out of range.
  std::string id_to_piece(int64_t id) const;
  int64_t piece_to_id(const std::string& piece) const;  // or -1
  int64_t eos_id() const { return eos_id_; }              // id of <|endoftext|>, or -1 if the vocab has none
  const std::vector<std::string>& special_tokens() const { return specials_; }

 private:
  void encode_piece(const std::string& bytes, std::vector<int64_t>& out) const;
  void encode_ordinary(const std::string& text, std::vector<int64_t>& out) const;
  void read_vocab(const std::string& path);
  void read_merges(const std::string& path);

  struct Merge {
    int64_t rank, id;  // priority (merges file order) and the id of the merged token
  };
  std::vector<std::string> pieces_;        // id -> vocabulary spelling ("" for ids the vocabulary skips)
  std::vector<std::string> piece_bytes_;   // id -> the bytes it stands for
  std::vector<bool> present_;              // id -> in the vocabulary
  std::unordered_map<std::string, int64_t> ids_;       // spelling -> id
  std::unordered_map<uint64_t, Merge> merges_;         // (left id << 32 | right id) -> merge
  int64_t byte_ids_[256] = {};                         // byte -> id of its one-character token
  std::vector<std::string> specials_;
  int64_t eos_id_ = -1;
};

}  // namespace lmzoo
