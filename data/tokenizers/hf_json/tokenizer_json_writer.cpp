// tokenizer.json written from a GPT-2 BPE or WordPiece tokenizer's files, in the layout the Rust library saves;
// SentencePiece kinds go to spm_tokenizer_json.cpp.
#include "data/tokenizers/hf_json/tokenizer_json_writer.h"

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

#include "data/tokenizers/hf_json/spm_tokenizer_json.h"
#include "data/tokenizers/hf_json/tokenizer_json_layout.h"
#include "data/tokenizers/tokenizer.h"

namespace lmzoo {

namespace hf {

nlohmann::ordered_json added_token_json(int id, const std::string& content, bool normalized, bool special) {
  return nlohmann::ordered_json{{"id", id},        {"content", content},       {"single_word", false},
                                {"lstrip", false}, {"rstrip", false},          {"normalized", normalized},
                                {"special", special}};
}

nlohmann::ordered_json tokenizer_json_document(nlohmann::ordered_json added_tokens, nlohmann::ordered_json normalizer,
                                               nlohmann::ordered_json pre_tokenizer,
                                               nlohmann::ordered_json post_processor, nlohmann::ordered_json decoder,
                                               nlohmann::ordered_json model) {
  nlohmann::ordered_json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = std::move(added_tokens);
  j["normalizer"] = std::move(normalizer);
  j["pre_tokenizer"] = std::move(pre_tokenizer);
  j["model"] = std::move(model);
  j["post_processor"] = std::move(post_processor);
  j["decoder"] = std::move(decoder);
  return j;
}

}  // namespace hf

namespace {

using nlohmann::ordered_json;
using hf::added_token_json;
using hf::tokenizer_json_document;

const std::string& file_of(const Tokenizer& tok, const char* a, const char* b) {
  const auto& files = tok.files();
  auto it = files.find(a);
  if (it == files.end()) it = files.find(b);
  if (it == files.end()) throw std::runtime_error(std::string("the GPT-2 tokenizer has no ") + a + " or " + b);
  return it->second;
}

std::string gpt2_json(const Tokenizer& tok) {
  ordered_json vocab = ordered_json::object();
  std::vector<std::pair<int, std::string>> by_id;
  const nlohmann::json source = nlohmann::json::parse(file_of(tok, "vocab.json", "encoder.json"));
  for (const auto& item : source.items()) by_id.emplace_back(item.value().get<int>(), item.key());
  std::sort(by_id.begin(), by_id.end());
  for (const auto& [id, token] : by_id) vocab[token] = id;
  ordered_json merges = ordered_json::array();
  std::istringstream lines(file_of(tok, "merges.txt", "vocab.bpe"));
  bool first = true;
  for (std::string line; std::getline(lines, line); first = false) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (first && line.rfind("#version", 0) == 0)) continue;
    const size_t space = line.find(' ');
    merges.push_back(ordered_json::array({line.substr(0, space), line.substr(space + 1)}));
  }
  ordered_json added = ordered_json::array();
  const int eos = tok.piece_to_id("<|endoftext|>");
  if (eos >= 0 && tok.is_special(eos)) added.push_back(added_token_json(eos, "<|endoftext|>", true, true));
  const auto byte_level = [](bool add_prefix_space, bool trim_offsets) {
    return ordered_json{{"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space}, {"trim_offsets", trim_offsets},
                        {"use_regex", true}};
  };
  ordered_json model{{"type", "BPE"},        {"dropout", nullptr},       {"unk_token", nullptr},
                     {"continuing_subword_prefix", nullptr},             {"end_of_word_suffix", nullptr},
                     {"fuse_unk", false},    {"byte_fallback", false},   {"ignore_merges", false},
                     {"vocab", std::move(vocab)}, {"merges", std::move(merges)}};
  return tokenizer_json_document(std::move(added), nullptr, byte_level(false, true), byte_level(true, false), byte_level(true, true),
                  std::move(model))
      .dump(2);
}

std::string wordpiece_json(const Tokenizer& tok) {
  bool lowercase = true, chinese = true;
  ordered_json strip_accents = nullptr;
  const auto config = tok.files().find("tokenizer_config.json");
  if (config != tok.files().end()) {
    const nlohmann::json c = nlohmann::json::parse(config->second);
    if (c.contains("do_lower_case") && c["do_lower_case"].is_boolean()) lowercase = c["do_lower_case"].get<bool>();
    if (c.contains("tokenize_chinese_chars") && c["tokenize_chinese_chars"].is_boolean()) {
      chinese = c["tokenize_chinese_chars"].get<bool>();
    }
    if (c.contains("strip_accents") && c["strip_accents"].is_boolean()) strip_accents = c["strip_accents"].get<bool>();
  }
  ordered_json vocab = ordered_json::object();
  for (int id = 0; id < tok.vocab_size(); ++id) vocab[tok.id_to_piece(id)] = tok.piece_to_id(tok.id_to_piece(id));
  ordered_json added = ordered_json::array();
  for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    const int id = tok.piece_to_id(special);
    if (id >= 0) added.push_back(added_token_json(id, special, false, true));
  }
  std::sort(added.begin(), added.end(), [](const ordered_json& a, const ordered_json& b) { return a["id"] < b["id"]; });
  const int cls = tok.piece_to_id("[CLS]"), sep = tok.piece_to_id("[SEP]");
  ordered_json post = nullptr;
  if (cls >= 0 && sep >= 0) {
    post = ordered_json{{"type", "BertProcessing"},
                        {"sep", ordered_json::array({"[SEP]", sep})},
                        {"cls", ordered_json::array({"[CLS]", cls})}};
  }
  ordered_json normalizer{{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", chinese},
                          {"strip_accents", strip_accents}, {"lowercase", lowercase}};
  ordered_json model{{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
                     {"max_input_chars_per_word", 100}, {"vocab", std::move(vocab)}};
  return tokenizer_json_document(std::move(added), std::move(normalizer), ordered_json{{"type", "BertPreTokenizer"}}, std::move(post),
                  ordered_json{{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}, std::move(model))
      .dump(2);
}

}  // namespace

std::optional<std::string> tokenizer_json_for(const Tokenizer& tokenizer) {
  switch (tokenizer.kind()) {
    case TokenizerKind::kSentencePiece:
      return hf::spm_tokenizer_json(tokenizer);
    case TokenizerKind::kHfJson:
      return tokenizer.files().at("tokenizer.json");
    case TokenizerKind::kGpt2Bpe:
      return gpt2_json(tokenizer);
    case TokenizerKind::kWordPiece:
      return wordpiece_json(tokenizer);
  }
  return std::nullopt;
}

}  // namespace lmzoo
