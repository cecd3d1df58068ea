// The tokenizer.json BPE model as the Rust tokenizers library runs it: characters (with continuing_subword_prefix /
// end_of_word_suffix) to ids, byte_fallback to <0xXX>, unknowns to unk_token (fused when fuse_unk), then merges by
// rank through a priority queue (O(n log n) per word); ignore_merges; a cache of short words. Leaves out: dropout.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/tokenizers/hf_json/model.h"

namespace lmzoo::hf {

struct BpeConfig {
  std::optional<std::string> unk_token, continuing_subword_prefix, end_of_word_suffix;
  bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
};

class BpeModel : public Model {
 public:
  // VOCAB token -> id, MERGES in rank order; throws TokenizerJsonError naming PATH.merges[i] for a merge naming a
  // token (or a merged token) outside the vocabulary.
  BpeModel(const std::unordered_map<std::string, int>& vocab, const std::vector<std::pair<std::string, std::string>>& merges,
           BpeConfig config, const std::string& path);
  void tokenize(const std::string& word, std::vector<int>& out) const override;
  int token_to_id(const std::string& token) const override;
  const std::string* id_to_token(int id) const override { return vocab_r_.get(id); }
  int vocab_size() const override { return int(vocab_r_.tokens.size()); }
  const BpeConfig& config() const { return config_; }

 private:
  std::vector<int> merge_word(const std::string& word) const;
  // WORD's characters as vocabulary ids (prefix/suffix, byte fallback and unknown runs as Rust's BPE::merge_word).
  std::vector<int> character_ids(const std::string& word) const;
  // IDS with the merges applied, lowest rank first, then leftmost (Rust's Word::merge_all).
  std::vector<int> merge_all(const std::vector<int>& ids) const;

  struct Merge {
    uint32_t rank;
    int new_id;
  };
  BpeConfig config_;
  std::unordered_map<std::string, int> vocab_;
  Vocab vocab_r_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id << 32 | right id) -> rank and merged id
  int unk_id_ = -1;                             // id of unk_token, -1 when it has none or the vocabulary lacks it
  int byte_ids_[256];                           // <0xXX> -> id, or -1

  static constexpr size_t kCacheCapacity = 10000;  // words, as the Rust library's
  static constexpr size_t kCacheMaxWord = 256;     // bytes: longer words are not cached
  mutable std::shared_mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int>> cache_;
};

}  // namespace lmzoo::hf
