// Tokenizer: training lmzoo's SentencePiece models from sampled corpus lines; finding, loading, serializing and
// saving any kind; the checks around the backends. Leaves out: sampling-based encodings (subword regularisation).
#include "data/tokenizers/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "base/digest.h"
#include "base/durable_io.h"
#include "data/corpus/corpus.h"
#include "data/tokenizers/hf_json/base64.h"
#include "data/tokenizers/sentencepiece_bridge.h"
#include "data/tokenizers/tokenizer_backend.h"

namespace fs = std::filesystem;

namespace lmzoo {

namespace {

constexpr int kMaxSentenceBytes = 4096;           // longer lines are cut into chunks for training
constexpr int kMinVocab = special::kNumSpecial + 256 + 1;  // specials, 256 byte pieces, one character

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

// Tokenizer::train's checks of its options, before any input is read.
void validate_train_options(const TokenizerTrainOptions& options) {
  if (options.vocab_size < kMinVocab + int(options.extra_symbols.size())) {
    throw std::runtime_error("vocab size " + std::to_string(options.vocab_size) + " is too small: " +
                             std::to_string(kMinVocab - 1) + " ids are reserved (" +
                             std::to_string(special::kNumSpecial) + " special tokens and 256 bytes)");
  }
  if (options.out_dir.empty()) throw std::runtime_error("no output directory given for the tokenizer");
  if (options.max_sentences <= 0) throw std::runtime_error("max_sentences must be positive");
  for (size_t i = 0; i < options.extra_symbols.size(); ++i) {
    const std::string& symbol = options.extra_symbols[i];
    if (symbol.empty() || symbol.find(',') != std::string::npos || symbol.find_first_of(" \t\n") != std::string::npos) {
      throw std::invalid_argument("special token '" + symbol + "' must be non-empty, without commas or white space");
    }
    if (std::find(options.extra_symbols.begin(), options.extra_symbols.begin() + long(i), symbol) !=
        options.extra_symbols.begin() + long(i)) {
      throw std::invalid_argument("special token '" + symbol + "' is given twice");
    }
  }
}

// SentencePiece trainer arguments for OPTIONS, the input lines given separately (already sampled).
SpmArgs spm_train_args(const TokenizerTrainOptions& options) {
  const auto& type = options.model_type;
  std::string symbols = "[MASK],[CLS],[SEP]";
  for (int i = 0; i < special::kNumSentinels; ++i) symbols += ",<extra_id_" + std::to_string(i) + ">";
  for (const auto& symbol : options.extra_symbols) symbols += "," + symbol;
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

// Writes OUT_DIR/tokenizer.model whole or not at all (staged beside OUT_DIR), creating OUT_DIR.
void write_model_file(const std::string& out_dir, const std::string& model) {
  StagedDirectory staged(out_dir);
  staged.fill([&model](const std::string& dir) {
    write_file_durably((fs::path(dir) / "tokenizer.model").string(), model);
  });
  staged.commit();
}

// The tokenizer DIR holds, in the order transformers' AutoTokenizer reads them: its kind and the names of its files
// (empty when there is none). tokenizer.json comes first (the fast tokenizer); a SentencePiece model beside it is
// kept among its files for the exports that need one (GGUF's llama tokenizer).
std::pair<TokenizerKind, std::vector<std::string>> find_tokenizer_files(const fs::path& dir) {
  std::error_code ec;
  auto has = [&](const char* name) { return fs::is_regular_file(dir / name, ec); };
  if (has("tokenizer.json")) {
    std::vector<std::string> names = {"tokenizer.json"};
    for (const char* beside : {"tokenizer_config.json", "tokenizer.model", "spiece.model"}) {
      if (has(beside)) names.push_back(beside);
    }
    return {TokenizerKind::kHfJson, names};
  }
  for (const char* model : {"tokenizer.model", "spiece.model"}) {
    if (has(model)) return {TokenizerKind::kSentencePiece, {model}};
  }
  if (has("vocab.json") && has("merges.txt")) return {TokenizerKind::kGpt2Bpe, {"vocab.json", "merges.txt"}};
  if (has("encoder.json") && has("vocab.bpe")) return {TokenizerKind::kGpt2Bpe, {"encoder.json", "vocab.bpe"}};
  if (has("vocab.txt")) {
    if (has("tokenizer_config.json")) return {TokenizerKind::kWordPiece, {"vocab.txt", "tokenizer_config.json"}};
    return {TokenizerKind::kWordPiece, {"vocab.txt"}};
  }
  return {TokenizerKind::kSentencePiece, {}};
}

// The backend of KIND over DIR, which holds FILES.
LoadedBackend load_backend(TokenizerKind kind, const std::string& dir, const TokenizerFiles& files) {
  switch (kind) {
    case TokenizerKind::kSentencePiece:
      return load_spm_backend(files.begin()->second);
    case TokenizerKind::kGpt2Bpe:
      return load_gpt2_backend(dir, files);
    case TokenizerKind::kWordPiece:
      return load_wordpiece_backend(dir, files);
    case TokenizerKind::kHfJson:
      return load_hf_json_backend(files);
  }
  throw std::logic_error("tokenizer kind outside its table");
}

constexpr const char* kBlobFormat = "lmzoo-tokenizer";

// Whether NAME is a SentencePiece model file (protobuf bytes, not text).
bool ends_with_model(const std::string& name) {
  return name.size() >= 6 && name.compare(name.size() - 6, 6, ".model") == 0;
}

// The blob of a tokenizer of KIND made of FILES: JSON holding the text files as they are and the binary ones (a
// SentencePiece model kept beside a tokenizer.json) in base64.
std::string serialized_blob(TokenizerKind kind, const TokenizerFiles& files) {
  nlohmann::json text = nlohmann::json::object(), binary = nlohmann::json::object();
  for (const auto& [name, bytes] : files) {
    if (ends_with_model(name)) {
      binary[name] = base64_encode(bytes);
    } else {
      text[name] = bytes;
    }
  }
  nlohmann::json blob = {{"format", kBlobFormat}, {"kind", enum_name(kind)}, {"files", text}};
  if (!binary.empty()) blob["binary_files"] = binary;
  return blob.dump();
}

}  // namespace

Tokenizer::Tokenizer() = default;
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
  const fs::path path = dir_or_file;
  std::error_code ec;
  const bool is_dir = fs::is_directory(path, ec);
  if (!is_dir && !fs::is_regular_file(path, ec)) {
    throw std::runtime_error("tokenizer not found: " + path.string() + " (train one with: lmzoo tokenizer train)");
  }
  TokenizerKind kind = TokenizerKind::kSentencePiece;
  std::vector<std::string> names = {path.filename().string()};
  if (is_dir) {
    std::tie(kind, names) = find_tokenizer_files(path);
  } else if (path.filename() == "tokenizer.json") {
    kind = TokenizerKind::kHfJson;
    if (fs::is_regular_file(path.parent_path() / "tokenizer_config.json", ec)) names.push_back("tokenizer_config.json");
  }
  if (names.empty()) {
    throw std::runtime_error("tokenizer not found in " + path.string() +
                             " (no tokenizer.model, spiece.model, tokenizer.json, vocab.json + merges.txt, encoder.json + "
                             "vocab.bpe or vocab.txt; train one with: lmzoo tokenizer train)");
  }
  const fs::path dir = is_dir ? path : path.parent_path();
  try {
    TokenizerFiles files;
    for (const auto& name : names) files[name] = read_file_bytes((dir / name).string());
    return from_files(kind, dir.string(), std::move(files));
  } catch (const std::runtime_error& e) {
    if (kind == TokenizerKind::kHfJson) {  // the message starts with the file's name: prefix its directory
      throw std::runtime_error((dir / "").string() + e.what());
    }
    throw std::runtime_error((is_dir && names.size() == 1 ? path / names[0] : path).string() + ": " + e.what());
  }
}

Tokenizer Tokenizer::from_serialized(const std::string& blob) {
  if (blob.empty() || blob[0] != '{') return from_files(TokenizerKind::kSentencePiece, "", {{"tokenizer.model", blob}});
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(blob);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(std::string("invalid serialized tokenizer: ") + e.what());
  }
  if (j.value("format", "") != kBlobFormat || !j.contains("kind") || !j.contains("files")) {
    throw std::runtime_error("invalid serialized tokenizer: not an lmzoo tokenizer blob");
  }
  const TokenizerKind kind = j.at("kind").get<TokenizerKind>();
  TokenizerFiles files = j.at("files").get<TokenizerFiles>();
  if (j.contains("binary_files")) {
    for (const auto& [name, text] : j.at("binary_files").items()) {
      const auto bytes = text.is_string() ? base64_decode(text.get<std::string>()) : std::nullopt;
      if (!bytes) throw std::runtime_error("invalid serialized tokenizer: " + name + " is not base64");
      files[name] = *bytes;
    }
  }
  const TempFilesDir dir(files);
  return from_files(kind, dir.path(), files);
}

Tokenizer Tokenizer::from_files(TokenizerKind kind, const std::string& dir, TokenizerFiles files) {
  Tokenizer t;
  LoadedBackend loaded = load_backend(kind, dir, files);
  t.kind_ = kind;
  t.backend_ = std::move(loaded.backend);
  t.special_ = std::move(loaded.special);
  t.files_ = std::move(loaded.files);
  if (kind == TokenizerKind::kSentencePiece) {
    t.serialized_ = t.files_.begin()->second;
  } else {
    t.serialized_ = serialized_blob(kind, t.files_);
  }
  t.special_flags_.resize(size_t(t.vocab_size()));
  for (int id = 0; id < t.vocab_size(); ++id) {
    t.special_flags_[size_t(id)] = t.special_.contains(id) || t.backend_->is_control(id);
  }
  return t;
}

void Tokenizer::remove_other_files(const std::string& dir) const {
  for (const char* name : {"tokenizer.model", "spiece.model", "tokenizer.json", "vocab.json", "merges.txt",
                           "encoder.json", "vocab.bpe", "vocab.txt", "tokenizer_config.json"}) {
    std::error_code ec;
    if (!files_.count(name)) fs::remove(fs::path(dir) / name, ec);
  }
}

void Tokenizer::save(const std::string& dir) const {
  remove_other_files(dir);
  write_files_durably(dir, files_);
}

std::vector<std::string> Tokenizer::file_names() const {
  std::vector<std::string> names;
  for (const auto& [name, bytes] : files_) names.push_back(name);
  return names;
}

bool Tokenizer::is_special(int id) const { return id >= 0 && id < vocab_size() && special_flags_[size_t(id)]; }

void Tokenizer::check_id(int id) const {
  if (id < 0 || id >= vocab_size()) {
    throw std::runtime_error("token id " + std::to_string(id) + " is out of range [0, " +
                             std::to_string(vocab_size()) + ")");
  }
}

std::vector<int> Tokenizer::encode(const std::string& text) const { return backend_->encode(text); }

void Tokenizer::set_split_special_tokens(bool on) { backend_->set_split_special_tokens(on); }

std::vector<int> Tokenizer::add_special_tokens(std::vector<int> ids) const {
  if (!backend_->add_special_tokens(ids)) {
    throw std::invalid_argument("adding special tokens (a post-processor) applies to tokenizer.json tokenizers only; "
                                "this one is " + enum_name(kind_));
  }
  return ids;
}

std::vector<int> Tokenizer::encode_long(const std::string& text, size_t max_bytes) const {
  max_bytes = std::max<size_t>(max_bytes, 16);
  const CutAt rule = cutter().rule;
  std::vector<int> ids;
  std::string_view rest = text;
  while (rest.size() > max_bytes) {
    const TextCut cut = find_cut(rest, max_bytes, rule);
    if (!cut.found()) break;
    const std::vector<int> part = encode(std::string(rest.substr(0, cut.end)));
    ids.insert(ids.end(), part.begin(), part.end());
    rest.remove_prefix(cut.next);
  }
  const std::vector<int> last = encode(std::string(rest));
  ids.insert(ids.end(), last.begin(), last.end());
  return ids;
}

TextCutter Tokenizer::cutter() const {
  const TokenizerBackend* backend = backend_.get();
  return {[backend](std::string_view text, size_t pos) { return backend->cut_at(text, pos, false); },
          [backend](std::string_view text, size_t pos) { return backend->cut_at(text, pos, true); }};
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  for (int id : ids) check_id(id);
  return backend_->decode(ids);
}

std::vector<std::string> Tokenizer::encode_pieces(const std::string& text) const {
  std::vector<std::string> pieces;
  for (int id : encode(text)) pieces.push_back(id_to_piece(id));
  return pieces;
}

std::string Tokenizer::id_to_piece(int id) const {
  check_id(id);
  return backend_->id_to_piece(id);
}

int Tokenizer::piece_to_id(const std::string& piece) const { return backend_->piece_to_id(piece); }

int Tokenizer::vocab_size() const { return backend_->vocab_size(); }

bool Tokenizer::is_word_start(int id) const {
  check_id(id);
  return backend_->is_word_start(id);
}

int Tokenizer::piece_bytes(int id) const {
  check_id(id);
  return backend_->piece_bytes(id);
}

std::string Tokenizer::hash() const { return fnv1a64_hex(serialized_); }

}  // namespace lmzoo
