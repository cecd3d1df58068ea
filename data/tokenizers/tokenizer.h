// Tokenizer: one facade over lmzoo's own SentencePiece models (trained in process, fixed special ids, exact byte
// round trip), Hugging Face's SentencePiece models (T5, Llama), GPT-2 byte-level BPE and BERT WordPiece.
// Leaves out: training the Hugging Face kinds.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/enum_table.h"
#include "data/tokenizers/special_ids.h"
#include "data/tokenizers/text_cut.h"
#include "data/tokenizers/tokenizer_files.h"


namespace lmzoo {

class TokenizerBackend;  // data/tokenizers/tokenizer_backend.h

enum class TokenizerKind { kSentencePiece, kGpt2Bpe, kWordPiece, kHfJson };

template <>
struct EnumTable<TokenizerKind> {
  static constexpr const char* what = "tokenizer kind";
  static constexpr EnumEntry<TokenizerKind> entries[] = {
      {TokenizerKind::kSentencePiece, "sentencepiece", "SentencePiece model (lmzoo's own, T5's or Llama's)"},
      {TokenizerKind::kGpt2Bpe, "gpt2-bpe", "GPT-2 byte-level BPE (vocab.json + merges.txt)"},
      {TokenizerKind::kWordPiece, "wordpiece", "BERT WordPiece (vocab.txt)"},
      {TokenizerKind::kHfJson, "tokenizer-json", "Hugging Face tokenizer.json (+ tokenizer_config.json)"},
  };
};
LMZOO_ENUM_JSON(TokenizerKind)

enum class TokenizerType { kBpe, kUnigram, kChar };

template <>
struct EnumTable<TokenizerType> {
  static constexpr const char* what = "model type";
  static constexpr EnumEntry<TokenizerType> entries[] = {
      {TokenizerType::kBpe, "bpe", "byte-pair merges"},
      {TokenizerType::kUnigram, "unigram", "unigram language model"},
      {TokenizerType::kChar, "char", "one piece per character"},
  };
};

struct TokenizerTrainOptions {
  std::vector<std::string> inputs;  // files or directories (.txt, .jsonl with "text")
  int vocab_size = 8000;            // upper bound for model_type "char"
  TokenizerType model_type = TokenizerType::kBpe;
  std::string out_dir;              // writes OUT/tokenizer.model
  int64_t max_sentences = 2000000;  // sampled input lines
  // Pieces kept whole wherever they occur (SentencePiece user-defined symbols), after the fixed special ids: a chat
  // template's markers, e.g. <|im_start|> and <|im_end|>.
  std::vector<std::string> extra_symbols;
  bool verbose = false;             // report the sample size on stderr
};

class Tokenizer {
 public:
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // Trains a model and writes OUT_DIR/tokenizer.model; throws std::runtime_error on bad input.
  static void train(const TokenizerTrainOptions& options);
  // DIR holding (first found) tokenizer.model | spiece.model | tokenizer.json | vocab.json + merges.txt |
  // encoder.json + vocab.bpe | vocab.txt (tokenizer.json and vocab.txt with tokenizer_config.json if present), or a
  // SentencePiece .model or tokenizer.json file path. Throws with a clear message.
  static Tokenizer load(const std::string& dir_or_file);
  // From serialized(): a SentencePiece model proto (as old checkpoints and exports hold) or the JSON blob of
  // another kind's files.
  static Tokenizer from_serialized(const std::string& blob);

  // Writes file_names() into DIR (created if missing), each fsynced, after removing any other tokenizer's files
  // there (so load(DIR) finds this one).
  void save(const std::string& dir) const;
  // Removes from DIR the files of any other tokenizer (names save() does not write).
  void remove_other_files(const std::string& dir) const;
  std::vector<std::string> file_names() const;
  const TokenizerFiles& files() const { return files_; }  // file name -> bytes, what save() writes
  TokenizerKind kind() const { return kind_; }
  const SpecialIds& special() const { return special_; }
  // The special ids and other control pieces: never masked, replaced or printed. False outside the vocabulary.
  bool is_special(int id) const;

  std::vector<int> encode(const std::string& text) const;
  // HF's split_special_tokens for every later encode: special tokens written in the text (GPT-2's <|endoftext|>,
  // tokenizer.json's special added tokens) stay plain text. Off by default: they become their ids, as in HF.
  void set_split_special_tokens(bool on);
  // IDS wrapped by tokenizer.json's post-processor (HF's add_special_tokens=True); throws std::invalid_argument
  // for the other kinds.
  std::vector<int> add_special_tokens(std::vector<int> ids) const;
  // The same ids as encode(text), encoding pieces of about max_bytes where the tokenizer's rules allow a cut
  // that cannot change them (data/tokenizers/spm_cuts.h, data/tokenizers/gpt2_cuts.h; WordPiece: before ASCII white space), else
  // longer ones (a unigram SentencePiece model: the whole text, see SpmCutRule::whole_only).
  std::vector<int> encode_long(const std::string& text, size_t max_bytes = 4096) const;
  // The cuts encode_long makes, for readers that cut documents into chunks (for_each_chunk in data/corpus/corpus.h).
  TextCutter cutter() const;
  std::string decode(const std::vector<int>& ids) const;
  std::vector<std::string> encode_pieces(const std::string& text) const;
  std::string id_to_piece(int id) const;
  int piece_to_id(const std::string& piece) const;  // the unk id (SentencePiece) or -1 for an unknown piece
  int vocab_size() const;
  // True when the piece starts a word (SentencePiece's space marker, GPT-2's leading space, WordPiece: no "##").
  bool is_word_start(int id) const;
  // UTF-8 bytes that id contributes to decode(): 0 for control ids (</s>), 1 for byte pieces. For lmzoo's own
  // models the sum over encode(text) is text.size(), so it measures the source bytes of any slice of a token
  // stream; for the other kinds it is the piece's length (WordPiece: plus one for the space before a word).
  int piece_bytes(int id) const;

  // The SentencePiece model proto for SentencePiece kinds, else a JSON blob {"format", "kind", "files"}.
  const std::string& serialized() const { return serialized_; }
  // Stable hex digest (FNV-1a 64) of serialized(): used to match data to checkpoints.
  std::string hash() const;

 private:
  Tokenizer();
  // The tokenizer of KIND from FILES, which DIR holds (the HF loaders read paths).
  static Tokenizer from_files(TokenizerKind kind, const std::string& dir, TokenizerFiles files);
  void check_id(int id) const;

  TokenizerKind kind_ = TokenizerKind::kSentencePiece;
  std::unique_ptr<TokenizerBackend> backend_;
  SpecialIds special_;
  TokenizerFiles files_;
  std::string serialized_;
  std::vector<bool> special_flags_;  // id -> is_special
};

}  // namespace lmzoo
