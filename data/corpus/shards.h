// Token shards: binary little-endian uint16/uint32 token files plus manifest.json, read memory-mapped;
// the writer, and prepare_data (corpus -> tokenizer -> train/val shards). Leaves out: compression and
// random-access writes (shards are written once, in order).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmzoo {

class DurableFile;
class Tokenizer;

// One split ("train" or "val") of a prepared data directory, read through mmap.
// Tokens of all shards of the split form one contiguous stream.
class TokenStream {
 public:
  // Opens DATA_DIR/manifest.json and the shards of SPLIT. Throws std::runtime_error with a
  // clear message when the directory, manifest or a shard is missing or malformed, or when the manifest's
  // vocab_size exceeds MODEL_VOCAB (the ids of the model that will read the tokens; 0: not checked). at() and
  // read() throw, naming the shard, on an id past either vocabulary.
  static TokenStream open(const std::string& data_dir, const std::string& split, int64_t model_vocab = 0);
  // In-memory stream (tests, eval on a text file).
  static TokenStream from_tokens(std::vector<int32_t> tokens);

  int64_t size() const;
  int32_t at(int64_t i) const;
  // Copies tokens [start, start+count) into dst (int64 for torch::kLong tensors).
  void read(int64_t start, int64_t count, int64_t* dst) const;
  int64_t source_bytes() const { return source_bytes_; }

 private:
  struct Shard;
  std::vector<std::shared_ptr<Shard>> shards_;
  std::vector<int64_t> offsets_;  // start token of each shard in the stream, plus the total
  std::shared_ptr<std::vector<int32_t>> memory_;
  int64_t source_bytes_ = 0;
};

// DATA_DIR/manifest.json as a JSON object; throws with a clear message if absent or invalid.
nlohmann::json read_manifest(const std::string& data_dir);

// Writes DATA_DIR/manifest.json atomically (a temporary file renamed over it).
void write_manifest(const std::string& data_dir, const nlohmann::json& manifest);

// Writes a prepared data directory whole or not at all: WRITE fills a staging directory beside OUT_DIR (its
// errors name OUT_DIR's files), then what an earlier prepare left in OUT_DIR (manifest first, shards, the files of
// another tokenizer) is replaced by it, the manifest last. A failure leaves OUT_DIR as it was.
void write_prepared_dir(const std::string& out_dir, const Tokenizer& tokenizer,
                        const std::function<void(const std::string& dir)>& write);

// "uint16" when every id of the vocabulary fits in 16 bits, else "uint32".
std::string shard_dtype(int vocab_size);

// Writes one split as rolling shards DIR/{split}_{NNNN}.bin of at most max_shard_tokens tokens each, each fsynced
// when closed; a failed write (a full disk) throws "cannot write SHARD: cause" when the shard is closed.
class ShardWriter {
 public:
  ShardWriter(std::string dir, std::string split, int vocab_size, int64_t max_shard_tokens = 100000000);
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Appends tokens; throws if an id is outside [0, vocab_size).
  void write(const int* tokens, size_t count);
  void write(const std::vector<int>& tokens) { write(tokens.data(), tokens.size()); }
  // Closes the last shard; returns the split's manifest entry {"shards":[{"file","tokens"}],"tokens"}.
  nlohmann::json finish();
  int64_t tokens() const { return total_; }
  int elem_bytes() const { return elem_bytes_; }

 private:
  void open_next();
  std::string dir_, split_;
  int vocab_size_, elem_bytes_;
  int64_t max_shard_tokens_, total_ = 0, in_shard_ = 0;
  std::unique_ptr<DurableFile> file_;
  nlohmann::json shards_ = nlohmann::json::array();
  std::vector<unsigned char> buffer_;
};

// Moves the last COUNT tokens of a finished split of DIR (SPLIT: its finish() entry, updated in place)
// to TO, in order, truncating or deleting the source shards; ON_BLOCK sees each block moved.
void move_tail(const std::string& dir, nlohmann::json& split, int64_t count, ShardWriter& to,
               const std::function<void(const std::vector<int>&)>& on_block);

struct PrepareOptions {
  std::string tokenizer;             // tokenizer directory or .model file
  std::vector<std::string> inputs;   // files or directories (.txt, .jsonl)
  std::string out_dir;
  double val_fraction = 0.1;         // last fraction of the token stream, contiguous
  int threads = 0;                   // 0: all cores
  size_t chunk_bytes = 1 << 20;      // text per encoding task (longer where the tokenizer allows no cut)
  size_t max_document_bytes = 8 << 20;  // of a document's text without an exact cut, encoded whole (see for_each_chunk)
  int64_t max_shard_tokens = 100000000;
  bool split_special_tokens = false;  // special tokens written in the text stay plain text (HF's switch)
};

struct PrepareResult {
  int64_t train_tokens = 0, val_tokens = 0, train_bytes = 0, val_bytes = 0, documents = 0;
  double seconds = 0;
};

// Encodes every document followed by the tokenizer's eos (</s>, <|endoftext|>, [SEP]) on all cores with bounded
// memory, writes the token stream in order, splits off the last val_fraction as "val", saves the tokenizer's files
// (Tokenizer::save), writes manifest.json. Throws when the tokenizer has no eos.
PrepareResult prepare_data(const PrepareOptions& options);

}  // namespace lmzoo
