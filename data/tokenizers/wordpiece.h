// BERT's WordPiece tokenizer as Hugging Face's BertTokenizer runs it: vocab.txt, BasicTokenizer (clean, CJK, lower
// case, accents, punctuation), greedy longest-match-first with "##". Leaves out NFC (see .cpp), offsets, training.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/unicode/unicode_text.h"  // HfTokenizerError

namespace lmzoo {

// tokenizer_config.json's switches. strip_accents unset follows do_lower_case (as in HF).
struct WordPieceOptions {
  bool do_lower_case = true;
  std::optional<bool> strip_accents;
  bool tokenize_chinese_chars = true;
  int max_input_chars_per_word = 100;  // longer words become [UNK]
};

class WordPieceTokenizer {
 public:
  // VOCAB_PATH: one token per line, id = line number (0-based). Throws HfTokenizerError for a missing file, a line
  // that is not UTF-8, or a vocabulary without [UNK].
  static WordPieceTokenizer load(const std::string& vocab_path, const WordPieceOptions& options = {});

  // BasicTokenizer alone: the words and punctuation marks of TEXT, special tokens ([CLS] [SEP] [MASK] [PAD]
  // [UNK], as spelled) kept whole. Throws HfTokenizerError if TEXT is not UTF-8.
  std::vector<std::string> basic_tokenize(const std::string& text) const;
  // The word pieces of TEXT ("##" on continuations; [UNK] for words with no split or over the length limit).
  std::vector<std::string> tokenize(const std::string& text) const;
  // Ids of tokenize(TEXT); with ADD_SPECIAL_TOKENS wrapped in [CLS] ... [SEP] (HF's default for one sequence).
  std::vector<int64_t> encode(const std::string& text, bool add_special_tokens = false) const;
  // Tokens joined by spaces with " ##" removed, then stripped (HF's convert_tokens_to_string; no clean-up of
  // spaces before punctuation). Throws HfTokenizerError for an id outside the vocabulary.
  std::string decode(const std::vector<int64_t>& ids) const;

  int64_t vocab_size() const { return static_cast<int64_t>(pieces_.size()); }
  std::string id_to_piece(int64_t id) const;            // throws if out of range
  int64_t piece_to_id(const std::string& piece) const;  // or -1
  int64_t unk_id() const { return unk_id_; }
  int64_t cls_id() const { return piece_to_id("[CLS]"); }  // -1 where the vocabulary has none
  int64_t sep_id() const { return piece_to_id("[SEP]"); }
  int64_t pad_id() const { return piece_to_id("[PAD]"); }
  int64_t mask_id() const { return piece_to_id("[MASK]"); }
  const WordPieceOptions& options() const { return options_; }

 private:
  void basic_tokenize_chunk(const std::u32string& chunk, std::vector<std::string>& out) const;
  std::u32string normalize_word(const std::u32string& word) const;
  void word_pieces(const std::string& word, std::vector<std::string>& out) const;

  WordPieceOptions options_;
  std::vector<std::string> pieces_;                 // id -> token
  std::unordered_map<std::string, int64_t> ids_;    // token -> id (a repeated token: its last line)
  int64_t unk_id_ = -1;
};

}  // namespace lmzoo
