// SentencePiece tokenizer: in-process training, loading, exact byte round trip, fixed special ids.
// Leaves out: normalisation (identity rule, so decode(encode(text)) == text byte for byte).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/enum_table.h"


namespace lmzoo {

class SpmProcessor;  // data/sentencepiece_bridge.h

// Fixed special-token ids, the same in every lmzoo tokenizer.
namespace special {
constexpr int kPad = 0;
constexpr int kUnk = 1;
constexpr int kBos = 2;     // <s>
constexpr int kEos = 3;     // </s>, also the document separator in token streams
constexpr int kMask = 4;    // [MASK]
constexpr int kCls = 5;     // [CLS]
constexpr int kSep = 6;     // [SEP]
constexpr int kSentinel0 = 7;  // <extra_id_0>; <extra_id_i> = kSentinel0 + i
constexpr int kNumSentinels = 100;
constexpr int kNumSpecial = kSentinel0 + kNumSentinels;  // ids [0, 107) are special
}  // namespace special

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
  bool verbose = false;             // report the sample size on stderr
};

class Tokenizer {
 public:
  Tokenizer();
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // Trains a model and writes OUT_DIR/tokenizer.model; throws std::runtime_error on bad input.
  static void train(const TokenizerTrainOptions& options);
  // Loads DIR/tokenizer.model (or a .model file path). Throws with a clear message.
  static Tokenizer load(const std::string& dir_or_file);
  // Loads from the serialized model proto (as stored in checkpoints and exports).
  static Tokenizer from_serialized(const std::string& model_proto);

  std::vector<int> encode(const std::string& text) const;
  // The same ids as encode(text) in linear time (SentencePiece is superlinear on long inputs): encodes
  // pieces of at most max_bytes cut where no token can span, i.e. after a newline or before a space
  // that follows a non-space (see chunk_cut in data/corpus.h). Use it for documents and files.
  std::vector<int> encode_long(const std::string& text, size_t max_bytes = 4096) const;
  std::string decode(const std::vector<int>& ids) const;
  std::vector<std::string> encode_pieces(const std::string& text) const;
  std::string id_to_piece(int id) const;
  int piece_to_id(const std::string& piece) const;
  int vocab_size() const;
  // True when the piece starts a word (begins with the SentencePiece space marker).
  bool is_word_start(int id) const;
  // UTF-8 bytes that id contributes to decode(): 0 for control ids (</s>), 1 for byte pieces. The sum
  // over encode(text) is text.size(), so it measures the source bytes of any slice of a token stream.
  int piece_bytes(int id) const;

  const std::string& serialized() const { return serialized_; }
  // Stable hex digest (FNV-1a 64) of the serialized model: used to match data to checkpoints.
  std::string hash() const;

 private:
  std::unique_ptr<SpmProcessor> sp_;
  std::string serialized_;
  std::array<int, 256> byte_ids_{};  // id of the byte-fallback piece <0xNN>
  std::vector<int> piece_bytes_;
};

}  // namespace lmzoo
