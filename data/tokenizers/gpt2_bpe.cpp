// GPT-2 byte-level BPE: loading of both file layouts, the merge loop of OpenAI's encoder.py (lowest rank first, all
// its occurrences left to right); pre-tokenising is data/tokenizers/gpt2_byte_level.cpp's. Leaves out a cache.
#include "data/tokenizers/gpt2_bpe.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace lmzoo {

namespace {

std::string read_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw HfTokenizerError("cannot read GPT-2 " + std::string(what) + " " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Gpt2BpeTokenizer Gpt2BpeTokenizer::load(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path d(dir);
  if (fs::exists(d / "vocab.json") && fs::exists(d / "merges.txt")) {
    return load((d / "vocab.json").string(), (d / "merges.txt").string());
  }
  if (fs::exists(d / "encoder.json") && fs::exists(d / "vocab.bpe")) {
    return load((d / "encoder.json").string(), (d / "vocab.bpe").string());
  }
  throw HfTokenizerError("no GPT-2 tokenizer in " + dir + ": expected vocab.json + merges.txt or encoder.json + vocab.bpe");
}

Gpt2BpeTokenizer Gpt2BpeTokenizer::load(const std::string& vocab_path, const std::string& merges_path) {
  Gpt2BpeTokenizer tok;
  tok.read_vocab(vocab_path);
  tok.read_merges(merges_path);
  return tok;
}

void Gpt2BpeTokenizer::read_vocab(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path, "vocabulary"));
  } catch (const nlohmann::json::parse_error& e) {
    throw HfTokenizerError(path + " is not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw HfTokenizerError(path + ": expected a JSON object {token: id}");
  char32_t to_byte[512];
  std::fill(std::begin(to_byte), std::end(to_byte), 0xFFFFFFFF);
  for (int b = 0; b < 256; ++b) to_byte[gpt2_byte_to_char(static_cast<uint8_t>(b))] = static_cast<char32_t>(b);
  for (const auto& [piece, value] : j.items()) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > (1 << 30)) {
      throw HfTokenizerError(path + ": the id of token '" + piece + "' is not an integer in [0, 2^30]");
    }
    const int64_t id = value.get<int64_t>();
    if (id >= static_cast<int64_t>(pieces_.size())) {
      pieces_.resize(id + 1);
      piece_bytes_.resize(id + 1);
      present_.resize(id + 1, false);
    }
    if (present_[id]) throw HfTokenizerError(path + ": id " + std::to_string(id) + " is given to two tokens");
    present_[id] = true;
    pieces_[id] = piece;
    ids_[piece] = id;
    for (char32_t c : utf8_to_code_points(piece, path)) {  // byte-level characters back to bytes
      if (c < 512 && to_byte[c] != 0xFFFFFFFF) piece_bytes_[id].push_back(static_cast<char>(to_byte[c]));
      else append_utf8(c, piece_bytes_[id]);  // an added token spelled in plain text
    }
    if (piece == "<|endoftext|>") eos_id_ = id;
  }
  for (int b = 0; b < 256; ++b) {
    const int64_t id = piece_to_id(code_points_to_utf8(std::u32string(1, gpt2_byte_to_char(static_cast<uint8_t>(b)))));
    if (id < 0) throw HfTokenizerError(path + ": no token for byte " + std::to_string(b) + " (not a byte-level BPE vocabulary)");
    byte_ids_[b] = id;
  }
  if (eos_id_ >= 0) specials_.push_back("<|endoftext|>");
}

void Gpt2BpeTokenizer::read_merges(const std::string& path) {
  std::istringstream in(read_file(path, "merges"));
  std::string line;
  int64_t line_no = 0, rank = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    const std::string where = path + " line " + std::to_string(line_no);
    const size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || line.find(' ', space + 1) != std::string::npos ||
        space + 1 == line.size()) {
      throw HfTokenizerError(where + ": expected two tokens separated by one space, got '" + line + "'");
    }
    const std::string left = line.substr(0, space), right = line.substr(space + 1);
    const int64_t a = piece_to_id(left), b = piece_to_id(right), merged = piece_to_id(left + right);
    if (a < 0 || b < 0 || merged < 0) {
      const std::string& missing = a < 0 ? left : b < 0 ? right : left + right;
      throw HfTokenizerError(where + ": token '" + missing + "' is not in the vocabulary");
    }
    merges_[static_cast<uint64_t>(a) << 32 | static_cast<uint64_t>(b)] = Merge{rank++, merged};
  }
}

int64_t Gpt2BpeTokenizer::piece_to_id(const std::string& piece) const {
  const auto it = ids_.find(piece);
  return it == ids_.end() ? -1 : it->second;
}

std::string Gpt2BpeTokenizer::id_to_piece(int64_t id) const {
  if (id < 0 || id >= vocab_size() || !present_[id]) {
    throw HfTokenizerError("token id " + std::to_string(id) + " is not in the GPT-2 vocabulary (size " +
                           std::to_string(vocab_size()) + ")");
  }
  return pieces_[id];
}

// BPE on one pre-tokenised piece: start from one token per byte, then merge the adjacent pair of lowest rank,
// every occurrence of it from left to right, until no adjacent pair has a merge.
void Gpt2BpeTokenizer::encode_piece(const std::string& bytes, std::vector<int64_t>& out) const {
  std::vector<int64_t> word;
  word.reserve(bytes.size());
  for (char c : bytes) word.push_back(byte_ids_[static_cast<uint8_t>(c)]);
  const auto key = [](int64_t a, int64_t b) { return static_cast<uint64_t>(a) << 32 | static_cast<uint64_t>(b); };
  while (word.size() > 1) {
    const Merge* best = nullptr;
    uint64_t best_key = 0;
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      const auto it = merges_.find(key(word[i], word[i + 1]));
      if (it != merges_.end() && (!best || it->second.rank < best->rank)) {
        best = &it->second;
        best_key = it->first;
      }
    }
    if (!best) break;
    std::vector<int64_t> next;
    next.reserve(word.size());
    for (size_t i = 0; i < word.size(); ++i) {
      if (i + 1 < word.size() && key(word[i], word[i + 1]) == best_key) {
        next.push_back(best->id);
        ++i;
      } else {
        next.push_back(word[i]);
      }
    }
    word.swap(next);
  }
  out.insert(out.end(), word.begin(), word.end());
}

void Gpt2BpeTokenizer::encode_ordinary(const std::string& text, std::vector<int64_t>& out) const {
  for (const std::string& piece : gpt2_pretokenize(text)) encode_piece(piece, out);
}

std::vector<int64_t> Gpt2BpeTokenizer::encode(const std::string& text, bool allow_special) const {
  std::vector<int64_t> out;
  if (!allow_special || specials_.empty()) {
    encode_ordinary(text, out);
    return out;
  }
  (void)utf8_to_code_points(text);  // say "not UTF-8" for the whole text, not for a piece of it
  size_t start = 0;
  while (start <= text.size()) {
    size_t best = std::string::npos, best_len = 0;  // leftmost special token, longest on a tie
    for (const std::string& s : specials_) {
      const size_t at = text.find(s, start);
      if (at != std::string::npos && (at < best || (at == best && s.size() > best_len))) {
        best = at;
        best_len = s.size();
      }
    }
    encode_ordinary(text.substr(start, best == std::string::npos ? std::string::npos : best - start), out);
    if (best == std::string::npos) break;
    out.push_back(piece_to_id(text.substr(best, best_len)));
    start = best + best_len;
  }
  return out;
}

std::string Gpt2BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size() || !present_[id]) (void)id_to_piece(id);  // throws the message
    out += piece_bytes_[id];
  }
  return out;
}

}  // namespace lmzoo
