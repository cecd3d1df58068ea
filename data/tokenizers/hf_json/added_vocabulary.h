// tokenizer.json "added_tokens" as the Rust tokenizers library's AddedVocabulary matches them: tokens with
// normalized=false found in the raw text first, the rest of the text normalized piece by piece, then tokens with
// normalized=true found in the normalized pieces; leftmost-longest, with single_word, lstrip and rstrip; special
// tokens left as plain text when split_special_tokens is on. Leaves out: offsets.
#pragma once
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "data/tokenizers/hf_json/text_pipeline.h"

namespace lmzoo::hf {

struct AddedToken {
  int id = -1;
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
};

// A piece of the input after added-token extraction: an added token (id >= 0) or normalized text for the
// pre-tokenizer (id -1; starts_input as in PreSplit).
struct Segment {
  std::string text;
  int id = -1;
  bool starts_input = false;
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  // TOKENS in the file's order; NORMALIZER (may be null) gives the normalized tokens' patterns.
  AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer);
  // TEXT cut into added tokens and normalized text (empty pieces dropped).
  std::vector<Segment> extract_and_normalize(const std::string& text, const Normalizer* normalizer,
                                             bool split_special_tokens) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  // Leftmost-longest matching of a set of patterns (Aho-Corasick's LeftmostLongest semantics, by a byte trie).
  struct Matcher {
    struct Node {
      std::vector<std::pair<unsigned char, int>> next;
      int token = -1;  // index into tokens_ of the first pattern ending here
    };
    std::vector<Node> nodes = std::vector<Node>(1);
    std::array<bool, 256> first_byte{};
    void add(const std::string& pattern, int token);
    // The longest pattern starting at AT: its length and token, or token -1.
    std::pair<size_t, int> longest_at(const std::string& text, size_t at) const;
  };
  // Rust's find_matches + split_with_indices on TEXT.
  void split(const std::string& text, bool starts_input, const Matcher& matcher, bool split_special,
             std::vector<Segment>& out) const;

  std::vector<AddedToken> tokens_;
  Matcher raw_, normalized_;
  bool any_raw_ = false, any_normalized_ = false;
};

}  // namespace lmzoo::hf
