// The tokenizer.json WordPiece model as the Rust tokenizers library runs it: greedy longest match first, later
// pieces spelled with continuing_subword_prefix, the whole word unk_token when any part has no match or it is
// longer than max_input_chars_per_word characters. Leaves out: the BERT text clean-up (the normalizer's job).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>

#include "data/tokenizers/hf_json/model.h"

namespace lmzoo::hf {

struct WordPieceConfig {
  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  int64_t max_input_chars_per_word = 100;
};

class WordPieceModel : public Model {
 public:
  WordPieceModel(const std::unordered_map<std::string, int>& vocab, WordPieceConfig config);
  void tokenize(const std::string& word, std::vector<int>& out) const override;
  int token_to_id(const std::string& token) const override;
  const std::string* id_to_token(int id) const override { return vocab_r_.get(id); }
  int vocab_size() const override { return int(vocab_r_.tokens.size()); }
  const WordPieceConfig& config() const { return config_; }

 private:
  int unk_id() const;  // throws when the vocabulary lacks unk_token

  WordPieceConfig config_;
  std::unordered_map<std::string, int> vocab_;
  Vocab vocab_r_;
};

}  // namespace lmzoo::hf
