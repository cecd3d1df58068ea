// make_model: the tokenizer.json "model" object to a BPE, WordPiece or Unigram model, every field checked.
#include "data/tokenizers/hf_json/model.h"

#include <unistd.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "data/tokenizers/hf_json/bpe_model.h"
#include "data/tokenizers/hf_json/json_fields.h"
#include "data/tokenizers/hf_json/unigram_model.h"
#include "data/tokenizers/hf_json/wordpiece_model.h"

namespace lmzoo::hf {

namespace {

// Bytes lmzoo keeps per id from 0 to the largest, present or not: the token and its text (a std::string each),
// flags (word start, special, present) and the model's row maps.
constexpr int kTableBytesPerId = 72;

// Refuses a vocabulary whose largest id (of TOKEN) makes the per-id tables larger than this machine's memory: a
// sparse id as large as 2^31 - 2 is inside the id range but would take ~150 GB. Checked before any table exists.
void require_id_tables_fit(int largest, const std::string& token, const std::string& vpath) {
  const double needed = (double(largest) + 1) * double(kTableBytesPerId);
  const double memory = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  if (needed <= memory) return;
  char sizes[96];
  std::snprintf(sizes, sizeof sizes, "%.1f GB; this machine has %.1f GB", needed / 1e9, memory / 1e9);
  json_error(vpath + "[\"" + token + "\"]", "id " + std::to_string(largest) +
                                                 " is too large: lmzoo keeps a row per id up to the largest (" +
                                                 std::to_string(kTableBytesPerId) + " bytes each: " +
                                                 sizes + "); number the tokens densely from 0");
}

std::unordered_map<std::string, int> vocab_map(const nlohmann::json& j, const std::string& path) {
  const std::string vpath = json_field_path(path, "vocab");
  const auto it = j.find("vocab");
  if (it == j.end() || !it->is_object()) json_error(vpath, "expected an object {token: id}");
  std::unordered_map<std::string, int> vocab;
  const std::string* largest_token = nullptr;
  int largest = -1;
  for (const auto& item : it->items()) {
    const int id = json_token_id(item.value(), vpath + "[\"" + item.key() + "\"]");
    vocab[item.key()] = id;
    if (id > largest) {
      largest = id;
      largest_token = &item.key();
    }
  }
  if (largest_token) require_id_tables_fit(largest, *largest_token, vpath);
  return vocab;
}

std::unique_ptr<Model> make_bpe(const nlohmann::json& j, const std::string& path) {
  json_check_known_keys(j, path, {"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix",
                             "fuse_unk", "byte_fallback", "ignore_merges", "vocab", "merges"});
  const auto dropout = j.find("dropout");
  if (dropout != j.end() && !dropout->is_null() && !(dropout->is_number() && dropout->get<double>() == 0.0)) {
    json_error(json_field_path(path, "dropout"), "BPE dropout is refused (lmzoo encodes deterministically); set it to null");
  }
  BpeConfig config;
  config.unk_token = json_optional_string(j, "unk_token", path);
  config.continuing_subword_prefix = json_optional_string(j, "continuing_subword_prefix", path);
  config.end_of_word_suffix = json_optional_string(j, "end_of_word_suffix", path);
  config.fuse_unk = json_bool_or(j, "fuse_unk", path, false);
  config.byte_fallback = json_bool_or(j, "byte_fallback", path, false);
  config.ignore_merges = json_bool_or(j, "ignore_merges", path, false);
  const std::string mpath = json_field_path(path, "merges");
  const auto merges_it = j.find("merges");
  std::vector<std::pair<std::string, std::string>> merges;
  if (merges_it != j.end() && !merges_it->is_null()) {
    if (!merges_it->is_array()) json_error(mpath, "expected an array of \"a b\" strings or [a, b] pairs");
    for (size_t i = 0; i < merges_it->size(); ++i) {
      const auto& m = (*merges_it)[i];
      const std::string where = mpath + "[" + std::to_string(i) + "]";
      if (m.is_string()) {
        const std::string line = m.get<std::string>();
        if (line.rfind("#version", 0) == 0) continue;  // as the Rust library's legacy merges reader
        const size_t space = line.find(' ');
        if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
          json_error(where, "expected two tokens separated by one space, got '" + line + "'");
        }
        merges.emplace_back(line.substr(0, space), line.substr(space + 1));
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      } else {
        json_error(where, "expected a string \"a b\" or a pair [\"a\", \"b\"]");
      }
    }
  }
  return std::make_unique<BpeModel>(vocab_map(j, path), merges, std::move(config), path);
}

std::unique_ptr<Model> make_wordpiece(const nlohmann::json& j, const std::string& path) {
  json_check_known_keys(j, path, {"type", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab"});
  WordPieceConfig config;
  config.unk_token = json_string_or(j, "unk_token", path, config.unk_token);
  config.continuing_subword_prefix = json_string_or(j, "continuing_subword_prefix", path, config.continuing_subword_prefix);
  config.max_input_chars_per_word =
      json_uint_or(j, "max_input_chars_per_word", path, config.max_input_chars_per_word, int64_t(1) << 40);
  return std::make_unique<WordPieceModel>(vocab_map(j, path), std::move(config));
}

std::unique_ptr<Model> make_unigram(const nlohmann::json& j, const std::string& path) {
  json_check_known_keys(j, path, {"type", "unk_id", "vocab", "byte_fallback"});
  const std::string vpath = json_field_path(path, "vocab");
  const auto it = j.find("vocab");
  if (it == j.end() || !it->is_array() || it->empty()) json_error(vpath, "expected a non-empty array of [piece, score]");
  std::vector<std::pair<std::string, double>> pieces;
  for (size_t i = 0; i < it->size(); ++i) {
    const auto& p = (*it)[i];
    if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_number()) {
      json_error(vpath + "[" + std::to_string(i) + "]", "expected [piece, score]");
    }
    pieces.emplace_back(p[0].get<std::string>(), p[1].get<double>());
  }
  int unk_id = -1;
  const auto unk = j.find("unk_id");
  if (unk != j.end() && !unk->is_null()) {
    unk_id = json_token_id(*unk, json_field_path(path, "unk_id"));
    if (size_t(unk_id) >= pieces.size()) json_error(json_field_path(path, "unk_id"), "outside the vocabulary");
  }
  return std::make_unique<UnigramModel>(std::move(pieces), unk_id, json_bool_or(j, "byte_fallback", path, false));
}

}  // namespace

std::unique_ptr<Model> make_model(const nlohmann::json& j, const std::string& path) {
  json_require_object(j, path);
  std::string type;
  if (j.contains("type")) {
    type = json_type(j, path);
  } else if (j.contains("merges")) {  // files written before models carried their type
    type = "BPE";
  } else if (j.contains("vocab") && j["vocab"].is_array()) {
    type = "Unigram";
  } else if (j.contains("max_input_chars_per_word")) {
    type = "WordPiece";
  } else {
    json_error(json_field_path(path, "type"), "missing");
  }
  if (type == "BPE") return make_bpe(j, path);
  if (type == "WordPiece") return make_wordpiece(j, path);
  if (type == "Unigram") return make_unigram(j, path);
  json_error(json_field_path(path, "type"), "'" + type + "' is not supported (BPE, WordPiece, Unigram)");
}

}  // namespace lmzoo::hf
