// Token shards: mmap reader (TokenStream), ShardWriter, manifest I/O and the prepare_data pipeline.
// Leaves out: compression, big-endian hosts, and resuming an interrupted prepare (it starts over).
#include "data/corpus/shards.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/durable_io.h"
#include "base/interrupt.h"
#include "data/corpus/corpus.h"
#include "data/tokenizers/tokenizer.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "token shards are little-endian; this host is not");

namespace fs = std::filesystem;

namespace lmzoo {

// ---------------------------------------------------------------------------------------------- reading

struct TokenStream::Shard {
  const unsigned char* data = nullptr;
  size_t bytes = 0;
  int elem_bytes = 2;
  std::string path;
  int64_t vocab_size = 0;  // the manifest's (or the model's): read() and at() throw, naming the shard, on a larger id
  ~Shard() {
    if (data) munmap(const_cast<unsigned char*>(data), bytes);
  }
  int32_t at(int64_t i) const {
    if (elem_bytes == 2) {
      uint16_t v;
      std::memcpy(&v, data + 2 * i, 2);
      return v;
    }
    uint32_t v;
    std::memcpy(&v, data + 4 * i, 4);
    return static_cast<int32_t>(v);
  }
  // at(i), refused with the shard's name when outside the vocabulary: models index embeddings with it.
  int32_t checked_at(int64_t i) const {
    const int32_t id = at(i);
    if (vocab_size > 0 && (id < 0 || id >= vocab_size)) {
      throw std::runtime_error("shard " + path + " is corrupt: token " + std::to_string(i) + " is id " +
                               std::to_string(id) + ", outside the vocabulary of " + std::to_string(vocab_size) +
                               " (re-run lmzoo prepare)");
    }
    return id;
  }
  // Memory-maps the file at `path` (elem_bytes set), which must hold exactly TOKENS tokens.
  void map(int64_t tokens) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) throw std::runtime_error("missing shard " + path);
    struct stat st {};
    fstat(fd, &st);
    bytes = static_cast<size_t>(st.st_size);
    if (static_cast<int64_t>(bytes) != tokens * elem_bytes) {
      ::close(fd);
      throw std::runtime_error("shard " + path + " has " + std::to_string(bytes) + " bytes, manifest says " +
                               std::to_string(tokens) + " tokens (" + std::to_string(tokens * elem_bytes) + " bytes)");
    }
    if (bytes > 0) {
      void* p = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
      if (p == MAP_FAILED) {
        ::close(fd);
        throw std::runtime_error("cannot memory-map shard " + path);
      }
      data = static_cast<const unsigned char*>(p);
    }
    ::close(fd);
  }
};

namespace {

int elem_bytes_of(const std::string& dtype, const std::string& where) {
  if (dtype == "uint16") return 2;
  if (dtype == "uint32") return 4;
  throw std::runtime_error("unknown dtype '" + dtype + "' in " + where);
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

nlohmann::json read_manifest(const std::string& data_dir) {
  std::error_code ec;
  if (fs::is_regular_file(data_dir, ec)) {
    throw std::runtime_error(data_dir + " is a file, not a prepared data directory (lmzoo prepare --out DIR); a "
                             "labelled .tsv/.jsonl fine-tunes a bert classifier with --init RUN_DIR");
  }
  if (!fs::is_directory(data_dir, ec)) throw std::runtime_error("data directory not found: " + data_dir);
  const std::string path = (fs::path(data_dir) / "manifest.json").string();
  std::ifstream in(path);
  if (!in) throw std::runtime_error("no manifest.json in " + data_dir + " (create it with: lmzoo prepare)");
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("invalid manifest " + path + ": " + first_line(e.what()));
  }
  if (!m.is_object() || m.value("format_version", 0) != 1) {
    throw std::runtime_error("unsupported manifest " + path + " (expected format_version 1)");
  }
  return m;
}

namespace {

// The largest id + 1 the shards of manifest M may hold for a model of MODEL_VOCAB ids (0: any): the manifest's
// vocab_size, refused when the model has fewer ids.
int64_t id_limit(const nlohmann::json& m, int64_t model_vocab, const std::string& where) {
  const int64_t manifest_vocab = m.value("vocab_size", int64_t{0});
  if (model_vocab > 0 && manifest_vocab > model_vocab) {
    throw std::runtime_error(where + " says vocab_size " + std::to_string(manifest_vocab) +
                             ", more ids than the model's vocabulary of " + std::to_string(model_vocab) +
                             " (data prepared with another tokenizer? re-run lmzoo prepare with the model's)");
  }
  return manifest_vocab > 0 ? manifest_vocab : model_vocab;
}

}  // namespace

TokenStream TokenStream::open(const std::string& data_dir, const std::string& split, int64_t model_vocab) {
  nlohmann::json m = read_manifest(data_dir);
  const std::string where = (fs::path(data_dir) / "manifest.json").string();
  TokenStream stream;
  try {
    const int64_t limit = id_limit(m, model_vocab, where);
    const auto& splits = m.at("splits");
    if (!splits.contains(split)) {
      std::string names;
      for (const auto& item : splits.items()) names += (names.empty() ? "" : ", ") + item.key();
      throw std::runtime_error("split '" + split + "' not found in " + where + " (available: " + names + ")");
    }
    const auto& info = splits.at(split);
    const int elem = elem_bytes_of(m.at("dtype").get<std::string>(), where);
    stream.offsets_.push_back(0);
    for (const auto& entry : info.at("shards")) {
      const std::string path = (fs::path(data_dir) / entry.at("file").get<std::string>()).string();
      const int64_t tokens = entry.at("tokens").get<int64_t>();
      auto shard = std::make_shared<Shard>();
      shard->elem_bytes = elem;
      shard->path = path;
      shard->vocab_size = limit;
      shard->map(tokens);
      stream.shards_.push_back(shard);
      stream.offsets_.push_back(stream.offsets_.back() + tokens);
    }
    if (stream.offsets_.back() != info.at("tokens").get<int64_t>()) {
      throw std::runtime_error("split '" + split + "' in " + where + " lists shards of " +
                               std::to_string(stream.offsets_.back()) + " tokens but says " +
                               std::to_string(info.at("tokens").get<int64_t>()));
    }
    stream.source_bytes_ = info.value("source_bytes", int64_t{0});
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("invalid manifest " + where + ": " + first_line(e.what()));
  }
  return stream;
}

TokenStream TokenStream::from_tokens(std::vector<int32_t> tokens) {
  TokenStream stream;
  stream.memory_ = std::make_shared<std::vector<int32_t>>(std::move(tokens));
  stream.offsets_ = {0, static_cast<int64_t>(stream.memory_->size())};
  return stream;
}

int64_t TokenStream::size() const { return offsets_.empty() ? 0 : offsets_.back(); }

int32_t TokenStream::at(int64_t i) const {
  if (i < 0 || i >= size()) {
    throw std::out_of_range("token index " + std::to_string(i) + " out of range [0, " + std::to_string(size()) + ")");
  }
  if (memory_) return (*memory_)[i];
  size_t s = std::upper_bound(offsets_.begin(), offsets_.end(), i) - offsets_.begin() - 1;
  return shards_[s]->checked_at(i - offsets_[s]);
}

void TokenStream::read(int64_t start, int64_t count, int64_t* dst) const {
  if (start < 0 || count < 0 || start + count > size()) {
    throw std::out_of_range("token range [" + std::to_string(start) + ", " + std::to_string(start + count) +
                            ") out of range [0, " + std::to_string(size()) + ")");
  }
  if (memory_) {
    std::copy(memory_->begin() + start, memory_->begin() + start + count, dst);
    return;
  }
  size_t s = std::upper_bound(offsets_.begin(), offsets_.end(), start) - offsets_.begin() - 1;
  for (int64_t i = start; count > 0; ++s) {
    const Shard& shard = *shards_[s];
    int64_t n = std::min(count, offsets_[s + 1] - i);
    for (int64_t j = i - offsets_[s]; j < i - offsets_[s] + n; ++j) {
      *dst++ = shard.checked_at(j);
    }
    i += n;
    count -= n;
  }
}

// ---------------------------------------------------------------------------------------------- writing

void write_manifest(const std::string& data_dir, const nlohmann::json& manifest) {
  replace_file_durably((fs::path(data_dir) / "manifest.json").string(), manifest.dump(2) + "\n");
}

namespace {

// True for the shard files a prepare writes: {train,val}[_inputs,_targets]_NNNN.bin.
bool is_shard_file(const std::string& name) {
  const size_t underscore = name.rfind('_');
  const size_t suffix = name.size() >= 4 ? name.size() - 4 : 0;
  if (underscore == std::string::npos || suffix < underscore + 5 || name.compare(suffix, 4, ".bin") != 0 ||
      name.find_first_not_of("0123456789", underscore + 1) != suffix) {
    return false;
  }
  const std::string split = name.substr(0, underscore);
  for (const char* known : {"train", "val", "train_inputs", "train_targets", "val_inputs", "val_targets"}) {
    if (split == known) return true;
  }
  return false;
}

// Removes what an earlier prepare left in DIR: the manifest first (a half-cleared directory never has one), its
// shards, and the files of a tokenizer other than TOKENIZER.
void remove_previous_output(const std::string& dir, const Tokenizer& tokenizer) {
  fs::remove(fs::path(dir) / "manifest.json");
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && is_shard_file(entry.path().filename().string())) stale.push_back(entry.path());
  }
  for (const auto& path : stale) fs::remove(path);
  tokenizer.remove_other_files(dir);
}

}  // namespace

void write_prepared_dir(const std::string& out_dir, const Tokenizer& tokenizer,
                        const std::function<void(const std::string& dir)>& write) {
  StagedDirectory staged(out_dir);
  staged.fill(write);
  std::error_code ec;
  if (fs::is_directory(out_dir, ec)) remove_previous_output(out_dir, tokenizer);
  staged.commit("manifest.json");
}

std::string shard_dtype(int vocab_size) { return vocab_size <= 65536 ? "uint16" : "uint32"; }

ShardWriter::ShardWriter(std::string dir, std::string split, int vocab_size, int64_t max_shard_tokens)
    : dir_(std::move(dir)), split_(std::move(split)), vocab_size_(vocab_size),
      elem_bytes_(shard_dtype(vocab_size) == "uint16" ? 2 : 4), max_shard_tokens_(max_shard_tokens) {
  if (vocab_size <= 0 || max_shard_tokens <= 0) throw std::runtime_error("ShardWriter: bad vocab size or shard size");
  fs::create_directories(dir_);
}

ShardWriter::~ShardWriter() = default;

void ShardWriter::open_next() {
  if (file_) {
    shards_.back()["tokens"] = in_shard_;
    file_->finish();
  }
  char name[64];
  std::snprintf(name, sizeof(name), "%s_%04zu.bin", split_.c_str(), shards_.size());
  file_ = std::make_unique<DurableFile>((fs::path(dir_) / name).string());
  shards_.push_back({{"file", name}, {"tokens", 0}});
  in_shard_ = 0;
}

void ShardWriter::write(const int* tokens, size_t count) {
  while (count > 0) {
    if (!file_ || in_shard_ == max_shard_tokens_) open_next();
    size_t n = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(count), max_shard_tokens_ - in_shard_));
    buffer_.resize(n * elem_bytes_);
    for (size_t i = 0; i < n; ++i) {
      int id = tokens[i];
      if (id < 0 || id >= vocab_size_) {
        throw std::runtime_error("token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(vocab_size_));
      }
      if (elem_bytes_ == 2) {
        uint16_t v = static_cast<uint16_t>(id);
        std::memcpy(&buffer_[2 * i], &v, 2);
      } else {
        uint32_t v = static_cast<uint32_t>(id);
        std::memcpy(&buffer_[4 * i], &v, 4);
      }
    }
    file_->write(buffer_.data(), buffer_.size());
    tokens += n;
    count -= n;
    in_shard_ += static_cast<int64_t>(n);
    total_ += static_cast<int64_t>(n);
  }
}

nlohmann::json ShardWriter::finish() {
  if (file_) {
    shards_.back()["tokens"] = in_shard_;
    const std::unique_ptr<DurableFile> last = std::move(file_);
    last->finish();
  }
  return {{"shards", shards_}, {"tokens", total_}};
}

void move_tail(const std::string& dir, nlohmann::json& split, int64_t count, ShardWriter& to,
               const std::function<void(const std::vector<int>&)>& on_block) {
  const int64_t total = split.at("tokens").get<int64_t>();
  if (count < 0 || count > total) throw std::runtime_error("move_tail: bad token count");
  const int64_t start = total - count;
  auto& shards = split.at("shards");
  nlohmann::json kept = nlohmann::json::array();
  int64_t offset = 0;
  std::vector<int> block;
  for (auto& entry : shards) {
    const int64_t n = entry.at("tokens").get<int64_t>();
    const int64_t from = std::max<int64_t>(0, start - offset);  // first token of this shard to move
    offset += n;
    if (from >= n) {
      kept.push_back(entry);
      continue;
    }
    const fs::path path = fs::path(dir) / entry.at("file").get<std::string>();
    const int elem = to.elem_bytes();  // same vocabulary, same dtype
    std::ifstream in(path, std::ios::binary);
    in.seekg(from * elem);
    std::vector<unsigned char> raw;
    for (int64_t i = from; i < n;) {
      const int64_t m = std::min<int64_t>(n - i, 1 << 20);
      raw.resize(m * elem);
      if (!in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()))) {
        throw std::runtime_error("cannot read shard " + path.string());
      }
      block.resize(m);
      for (int64_t j = 0; j < m; ++j) {
        uint32_t v = 0;
        std::memcpy(&v, &raw[j * elem], elem);  // little-endian: the low bytes come first
        block[j] = static_cast<int>(v);
      }
      on_block(block);
      to.write(block);
      i += m;
    }
    in.close();
    if (from == 0) {
      fs::remove(path);
    } else {
      fs::resize_file(path, from * elem);
      entry["tokens"] = from;
      kept.push_back(entry);
    }
  }
  shards = kept;
  split["tokens"] = start;
}

// ---------------------------------------------------------------------------------------------- prepare

namespace {

struct Batch {
  std::vector<std::string> texts;
  std::vector<bool> ends;  // end_of_document after texts[i]
  size_t bytes = 0;
};

struct Encoded {
  std::vector<int> ids;
  int64_t source_bytes = 0, documents = 0;
};

Encoded encode_batch(const Tokenizer& tokenizer, const Batch& batch) {
  Encoded out;
  const int eos = tokenizer.special().eos;
  for (size_t i = 0; i < batch.texts.size(); ++i) {
    std::vector<int> ids = tokenizer.encode_long(batch.texts[i]);
    out.ids.insert(out.ids.end(), ids.begin(), ids.end());
    if (batch.ends[i]) {
      out.ids.push_back(eos);
      ++out.documents;
    }
  }
  for (int id : out.ids) out.source_bytes += tokenizer.piece_bytes(id);
  return out;
}

// Encodes the corpus in batches of about chunk_bytes on up to THREADS threads into TRAIN, written in submission
// order; counts documents into RESULT and returns the source bytes of the tokens written. Throws, before any
// encoding is waited for, when the corpus holds nothing but whitespace.
int64_t encode_corpus(const PrepareOptions& o, const Tokenizer& tokenizer, const std::vector<std::string>& files,
                      ShardWriter& train, PrepareResult& result) {
  const size_t threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  int64_t total_bytes = 0;
  std::deque<std::future<Encoded>> in_flight;
  Batch batch;
  auto write_oldest = [&] {
    Encoded e = in_flight.front().get();
    in_flight.pop_front();
    train.write(e.ids);
    total_bytes += e.source_bytes;
    result.documents += e.documents;
  };
  auto submit = [&] {
    if (batch.texts.empty()) return;
    while (in_flight.size() >= threads) write_oldest();
    in_flight.push_back(std::async(std::launch::async, encode_batch, std::cref(tokenizer), std::move(batch)));
    batch = Batch{};
  };
  bool blank = true, empty = true;  // only whitespace so far; nothing at all so far
  for_each_chunk(files, o.chunk_bytes, [&](const std::string& text, bool end_of_document) {
    throw_if_interrupted("preparing");  // Ctrl-C: the staged directory is removed on the way out
    blank = blank && text.find_first_not_of(" \t\n\r\f\v") == std::string::npos;
    empty = empty && text.empty();
    batch.texts.push_back(text);
    batch.ends.push_back(end_of_document);
    batch.bytes += text.size();
    if (batch.bytes >= o.chunk_bytes) submit();
  }, tokenizer.cutter(), std::max(o.max_document_bytes, o.chunk_bytes));
  if (blank) {
    throw std::runtime_error("nothing to prepare: " + (files.size() == 1 ? files[0] : std::to_string(files.size()) +
                             " input files") + " hold" + (files.size() == 1 ? "s" : "") + " no text" +
                             (empty ? "" : " (only whitespace)"));
  }
  submit();
  while (!in_flight.empty()) write_oldest();
  return total_bytes;
}

// The manifest entries of both splits, each with its exact source bytes.
struct Splits {
  nlohmann::json train, val;
  int64_t train_bytes = 0, val_bytes = 0;
};

// Finishes TRAIN and moves the last val_fraction of its stream into the validation split.
Splits split_validation(const PrepareOptions& o, const Tokenizer& tokenizer, ShardWriter& train, int64_t total_bytes) {
  Splits splits;
  splits.train = train.finish();
  const int64_t total = train.tokens();
  ShardWriter val(o.out_dir, "val", tokenizer.vocab_size(), o.max_shard_tokens);
  int64_t val_bytes = 0;
  move_tail(o.out_dir, splits.train, std::llround(total * o.val_fraction), val, [&](const std::vector<int>& block) {
    for (int id : block) val_bytes += tokenizer.piece_bytes(id);
  });
  splits.val = val.finish();
  splits.train_bytes = total_bytes - val_bytes;
  splits.val_bytes = val_bytes;
  splits.train["source_bytes"] = splits.train_bytes;
  splits.val["source_bytes"] = splits.val_bytes;
  return splits;
}

// Saves the tokenizer's files into OUT_DIR, then the manifest (last: a directory with a manifest is complete).
void write_prepared(const PrepareOptions& o, const Tokenizer& tokenizer, const std::vector<std::string>& files,
                    int64_t documents, const Splits& splits) {
  const int vocab = tokenizer.vocab_size();
  tokenizer.save(o.out_dir);
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& f : files) sources.push_back({{"path", f}, {"bytes", static_cast<int64_t>(fs::file_size(f))}});
  write_manifest(o.out_dir, {{"format_version", 1},
                             {"tokenizer_hash", tokenizer.hash()},
                             {"vocab_size", vocab},
                             {"dtype", shard_dtype(vocab)},
                             {"documents", documents},
                             {"splits", {{"train", splits.train}, {"val", splits.val}}},
                             {"sources", sources}});
}

// prepare_data's work into the fresh directory O.out_dir; throws on a corpus without text.
PrepareResult prepare_into(const PrepareOptions& o, const Tokenizer& tokenizer, const std::vector<std::string>& files,
                           std::chrono::steady_clock::time_point t0) {
  PrepareResult result;
  ShardWriter train(o.out_dir, "train", tokenizer.vocab_size(), o.max_shard_tokens);
  const int64_t total_bytes = encode_corpus(o, tokenizer, files, train, result);
  // The validation split is the last val_fraction of the stream; its source bytes are counted exactly.
  const Splits splits = split_validation(o, tokenizer, train, total_bytes);
  write_prepared(o, tokenizer, files, result.documents, splits);

  result.train_tokens = splits.train["tokens"].get<int64_t>();
  result.val_tokens = splits.val["tokens"].get<int64_t>();
  result.train_bytes = splits.train_bytes;
  result.val_bytes = splits.val_bytes;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace

PrepareResult prepare_data(const PrepareOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!(o.val_fraction >= 0 && o.val_fraction < 1)) {
    throw std::runtime_error("val fraction must be in [0, 1), got " + std::to_string(o.val_fraction));
  }
  if (o.out_dir.empty()) throw std::runtime_error("no output directory given");
  Tokenizer loaded = Tokenizer::load(o.tokenizer);
  loaded.set_split_special_tokens(o.split_special_tokens);
  const Tokenizer tokenizer = std::move(loaded);
  if (tokenizer.special().eos < 0) {
    throw std::runtime_error("the " + enum_name(tokenizer.kind()) + " tokenizer " + o.tokenizer +
                             " has no end-of-document token (</s>, <|endoftext|> or [SEP]) to separate documents");
  }
  const std::vector<std::string> files = list_input_files(o.inputs);
  PrepareResult result;
  InterruptChecks interrupt_checks;  // a first SIGINT/SIGTERM stops at the next chunk and leaves nothing behind
  write_prepared_dir(o.out_dir, tokenizer, [&](const std::string& dir) {
    PrepareOptions staged = o;
    staged.out_dir = dir;
    result = prepare_into(staged, tokenizer, files, t0);
  });
  return result;
}

}  // namespace lmzoo
