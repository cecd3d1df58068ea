// The tokenizer.json Unigram model as the Rust tokenizers library runs it: the best-scoring segmentation (Viterbi
// over the pieces' log probabilities, a character outside every piece scored min_score - 10 as unk), adjacent
// unknowns fused, then byte_fallback to <0xXX> for pieces not in the vocabulary. Leaves out: sampling, training.
#pragma once
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "data/tokenizers/hf_json/model.h"

namespace lmzoo::hf {

class UnigramModel : public Model {
 public:
  // PIECES: id -> (piece, score); UNK_ID: -1 for none.
  UnigramModel(std::vector<std::pair<std::string, double>> pieces, int unk_id, bool byte_fallback);
  void tokenize(const std::string& word, std::vector<int>& out) const override;
  int token_to_id(const std::string& token) const override;
  const std::string* id_to_token(int id) const override;
  int vocab_size() const override { return int(pieces_.size()); }
  int unk_id() const { return unk_id_; }
  bool byte_fallback() const { return byte_fallback_; }

 private:
  // The segmentation of TEXT into substrings (unknown runs fused).
  std::vector<std::string> segment(const std::string& text) const;

  struct TrieNode {
    std::unordered_map<unsigned char, int> next;  // byte -> node
    bool terminal = false;
    int id = -1;  // token_to_ids of the piece ending here (the last id with that spelling)
  };
  std::vector<std::pair<std::string, double>> pieces_;
  std::unordered_map<std::string, int> ids_;  // piece -> its last id
  std::vector<TrieNode> trie_;
  int unk_id_ = -1;
  bool byte_fallback_ = false;
  double min_score_ = 0;
};

}  // namespace lmzoo::hf
