// SentencePiece tokenizer: in-process training from sampled corpus lines, loading, exact round trip.
// Leaves out: normalisation and sampling-based encodings (subword regularisation).
#include "data/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "data/corpus.h"
#include "data/sentencepiece_bridge.h"

namespace fs = std::filesystem;

namespace lmzoo {

namespace {

const std::string kSpaceMarker = "\xE2\x96\x81";  // U+2581, SentencePiece's space symbol
constexpr int kMaxSentenceBytes = 4096;           // longer lines are cut into chunks for training
constexpr int kMinVocab = special::kNumSpecial + 256 + 1;  // specials, 256 byte pieces, one character

// Expected piece of special id I.
std::string special_piece(int i) {
  static const char* fixed[] = {"<pad>", "<unk>", "<s>", "</s>", "[MASK]", "[CLS]", "[SEP]"};
  if (i < special::kSentinel0) return fixed[i];
  return "<extra_id_" + std::to_string(i - special::kSentinel0) + ">";
}

// Uniform sample (reservoir, fixed seed) of at most MAX non-empty lines of the corpus.
std::vector<std::string> sample_lines(const std::vector<std::string>& inputs, int64_t max, int64_t& seen) {
  std::vector<std::string> sample;
  std::mt19937_64 rng(1234);
  seen = 0;
  for_each_chunk(inputs, kMaxSentenceBytes, [&](const std::string& chunk, bool) {
    std::istringstream lines(chunk);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty()) continue;
      ++seen;
      if (static_cast<int64_t>(sample.size()) < max) {
        sample.push_back(std::move(line));
      } else {
        uint64_t j = rng() % static_cast<uint64_t>(seen);
        if (j < static_cast<uint64_t>(max)) sample[j] = std::move(line);
      }
    }
  });
  return sample;
}

// A SentencePiece error message without its "file.cc(123) [check]" prefix.
std::string status_message(const std::string& m) {
  auto bracket = m.rfind("] ");
  return bracket == std::string::npos ? m : m.substr(bracket + 2);
}

// Throws when a bridge call returned an error message; FALLBACK is the reason when SentencePiece gave none.
void check(const std::string& error, const std::string& what, const std::string& fallback = "no reason given") {
  if (error.empty()) return;
  std::string reason = status_message(error);
  if (reason.find_first_not_of(" \t\n") == std::string::npos) reason = fallback;
  throw std::runtime_error(what + ": " + reason);
}

// Tokenizer::train's checks of its options, before any input is read.
void validate_train_options(const TokenizerTrainOptions& options) {
  if (options.vocab_size < kMinVocab) {
    throw std::runtime_error("vocab size " + std::to_string(options.vocab_size) + " is too small: " +
                             std::to_string(kMinVocab - 1) + " ids are reserved (" +
                             std::to_string(special::kNumSpecial) + " special tokens and 256 bytes)");
  }
  if (options.out_dir.empty()) throw std::runtime_error("no output directory given for the tokenizer");
  if (options.max_sentences <= 0) throw std::runtime_error("max_sentences must be positive");
}

// SentencePiece trainer arguments for OPTIONS, the input lines given separately (already sampled).
SpmArgs spm_train_args(const TokenizerTrainOptions& options) {
  const auto& type = options.model_type;
  std::string symbols = "[MASK],[CLS],[SEP]";
  for (int i = 0; i < special::kNumSentinels; ++i) symbols += ",<extra_id_" + std::to_string(i) + ">";
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  // Exact round trip needs: identity normalisation, no dummy prefix, no whitespace squeezing, and byte
  // fallback for characters outside the vocabulary. vocab_size is an upper bound (hard limit off), so a
  // small corpus or the char model never fails for asking too much.
  return {
      {"model_type", enum_name(type)},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"hard_vocab_limit", "false"},
      {"pad_id", "0"}, {"unk_id", "1"}, {"bos_id", "2"}, {"eos_id", "3"},
      {"user_defined_symbols", symbols},
      {"byte_fallback", "true"},
      {"normalization_rule_name", "identity"},
      {"add_dummy_prefix", "false"},
      {"remove_extra_whitespaces", "false"},
      {"allow_whitespace_only_pieces", "true"},
      {"split_digits", "true"},
      {"character_coverage", type == TokenizerType::kChar ? "1.0" : "0.9995"},
      {"max_sentence_length", std::to_string(2 * kMaxSentenceBytes)},
      {"input_sentence_size", "0"},  // already sampled (sample_lines)
      {"num_threads", std::to_string(threads)},
      // SentencePiece's own log stays off even with verbose: under the RTLD_DEEPBIND bridge its std::cerr
      // is libstdc++'s never-constructed copy (the executable holds a copy-relocated one): it would crash.
      {"minloglevel", "3"},
  };
}

// Trains SentencePiece on LINES; returns the serialized model proto, or throws with SentencePiece's reason.
std::string train_model_proto(const TokenizerTrainOptions& options, const std::vector<std::string>& lines) {
  std::string model;
  const std::string error = spm_train(spm_train_args(options), lines, &model);
  if (!error.empty()) {
    std::string message = status_message(error);
    if (message.find("required_chars") != std::string::npos) {
      throw std::runtime_error("vocab size " + std::to_string(options.vocab_size) +
                               " is too small for the characters of this corpus (" + message.substr(0, message.find(". Increase")) + ")");
    }
    throw std::runtime_error("tokenizer training failed: " + message);
  }
  return model;
}

// Writes OUT_DIR/tokenizer.model, creating OUT_DIR.
void write_model_file(const std::string& out_dir, const std::string& model) {
  fs::create_directories(out_dir);
  const std::string path = (fs::path(out_dir) / "tokenizer.model").string();
  std::ofstream out(path, std::ios::binary);
  out.write(model.data(), static_cast<std::streamsize>(model.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

Tokenizer::Tokenizer() : sp_(new_spm_processor()) {}
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

void Tokenizer::train(const TokenizerTrainOptions& options) {
  validate_train_options(options);
  const auto& type = options.model_type;
  int64_t seen = 0;
  std::vector<std::string> lines = sample_lines(options.inputs, options.max_sentences, seen);
  if (lines.empty()) throw std::runtime_error("the training input contains no text");
  if (options.verbose) {
    std::cerr << "tokenizer: training " << type << " (vocab size <= " << options.vocab_size << ") on " << lines.size()
              << " of " << seen << " lines" << std::endl;
  }
  const std::string model = train_model_proto(options, lines);
  Tokenizer trained = from_serialized(model);  // verifies the special ids
  write_model_file(options.out_dir, model);
}

Tokenizer Tokenizer::load(const std::string& dir_or_file) {
  fs::path path = dir_or_file;
  std::error_code ec;
  if (fs::is_directory(path, ec)) path /= "tokenizer.model";
  if (!fs::is_regular_file(path, ec)) {
    throw std::runtime_error("tokenizer not found: " + path.string() + " (train one with: lmzoo tokenizer train)");
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return from_serialized(ss.str());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path.string() + ": " + e.what());
  }
}

Tokenizer Tokenizer::from_serialized(const std::string& model_proto) {
  Tokenizer t;
  if (model_proto.empty()) throw std::runtime_error("invalid tokenizer model: the file is empty");
  check(t.sp_->load_serialized(model_proto), "invalid tokenizer model", "not a SentencePiece model file");
  t.serialized_ = model_proto;
  if (t.sp_->piece_size() <= special::kNumSpecial + 256) throw std::runtime_error("not an lmzoo tokenizer: vocabulary too small");
  for (int i = 0; i < special::kNumSpecial; ++i) {
    if (t.sp_->id_to_piece(i) != special_piece(i)) {
      throw std::runtime_error("not an lmzoo tokenizer: id " + std::to_string(i) + " is '" + t.sp_->id_to_piece(i) +
                               "', expected '" + special_piece(i) + "'");
    }
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    int id = t.sp_->piece_to_id(name);
    if (!t.sp_->is_byte(id)) throw std::runtime_error("not an lmzoo tokenizer: no byte-fallback piece " + std::string(name));
    t.byte_ids_[b] = id;
  }
  t.piece_bytes_.resize(t.sp_->piece_size());
  for (int id = 0; id < t.sp_->piece_size(); ++id) {
    std::string piece = t.sp_->id_to_piece(id);
    if (t.sp_->is_control(id)) t.piece_bytes_[id] = 0;
    else if (t.sp_->is_byte(id)) t.piece_bytes_[id] = 1;
    else if (t.sp_->is_unknown(id)) t.piece_bytes_[id] = 5;  // " \u2047 ", never produced with byte fallback
    else {
      int markers = 0;
      for (size_t p = piece.find(kSpaceMarker); p != std::string::npos; p = piece.find(kSpaceMarker, p + 3)) ++markers;
      t.piece_bytes_[id] = static_cast<int>(piece.size()) - 2 * markers;  // each 3-byte marker decodes to ' '
    }
  }
  return t;
}

std::vector<int> Tokenizer::encode(const std::string& text) const {
  // A literal U+2581 in the text would decode as a space, so it is encoded as its three bytes.
  std::vector<int> ids, part_ids;
  size_t start = 0;
  while (true) {
    size_t marker = text.find(kSpaceMarker, start);
    size_t end = marker == std::string::npos ? text.size() : marker;
    if (end > start) {
      check(sp_->encode(std::string_view(text).substr(start, end - start), &part_ids), "encode failed");
      ids.insert(ids.end(), part_ids.begin(), part_ids.end());
    }
    if (marker == std::string::npos) break;
    for (unsigned char c : kSpaceMarker) ids.push_back(byte_ids_[c]);
    start = marker + kSpaceMarker.size();
  }
  return ids;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  const int n = vocab_size();
  for (int id : ids) {
    if (id < 0 || id >= n) throw std::runtime_error("token id " + std::to_string(id) + " is out of range [0, " + std::to_string(n) + ")");
  }
  std::string text;
  check(sp_->decode(ids, &text), "decode failed");
  return text;
}

std::vector<int> Tokenizer::encode_long(const std::string& text, size_t max_bytes) const {
  std::vector<int> ids;
  max_bytes = std::max<size_t>(max_bytes, 16);  // room for whole UTF-8 characters
  for (size_t start = 0; start < text.size();) {
    const std::string rest = text.substr(start, max_bytes + 1);  // +1: a cut may fall just before a space
    const size_t cut = chunk_cut(rest, max_bytes);
    std::vector<int> part = encode(rest.substr(0, cut));
    ids.insert(ids.end(), part.begin(), part.end());
    start += cut;
  }
  return ids;
}

std::vector<std::string> Tokenizer::encode_pieces(const std::string& text) const {
  std::vector<std::string> pieces;
  for (int id : encode(text)) pieces.push_back(id_to_piece(id));
  return pieces;
}

std::string Tokenizer::id_to_piece(int id) const {
  if (id < 0 || id >= vocab_size()) throw std::runtime_error("token id " + std::to_string(id) + " is out of range");
  return sp_->id_to_piece(id);
}

int Tokenizer::piece_to_id(const std::string& piece) const { return sp_->piece_to_id(piece); }

int Tokenizer::vocab_size() const { return sp_->piece_size(); }

bool Tokenizer::is_word_start(int id) const { return id_to_piece(id).rfind(kSpaceMarker, 0) == 0; }

int Tokenizer::piece_bytes(int id) const {
  if (id < 0 || id >= vocab_size()) throw std::runtime_error("token id " + std::to_string(id) + " is out of range");
  return piece_bytes_[id];
}

std::string Tokenizer::hash() const {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64
  for (unsigned char c : serialized_) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace lmzoo
