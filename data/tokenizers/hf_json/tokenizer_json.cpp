// tokenizer.json parsing (every field checked, unknown ones refused) and the encode / decode pipeline of the Rust
// library: added tokens, normalizer, pre-tokenizer, model; post-processor on request; decoder.
#include "data/tokenizers/hf_json/tokenizer_json.h"

#include <nlohmann/json.hpp>

#include "data/tokenizers/hf_json/json_fields.h"
#include "data/unicode/utf8.h"

namespace lmzoo::hf {

namespace {

constexpr int kMaxDepth = 128;

// Refuses JSON nested deeper than kMaxDepth before it is parsed (a hostile file must not exhaust the stack).
void check_depth(const std::string& text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) throw TokenizerJsonError("(document): nested deeper than " + std::to_string(kMaxDepth) + " levels");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

// Collects "SECTION:Type" for every component object under J.
void collect_types(const nlohmann::json& j, const std::string& section, std::set<std::string>& out) {
  if (j.is_object()) {
    const auto t = j.find("type");
    if (t != j.end() && t->is_string()) out.insert(section + ":" + t->get<std::string>());
    for (const auto& item : j.items()) {
      if (item.key() != "vocab" && item.key() != "merges") collect_types(item.value(), section, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) collect_types(v, section, out);
  }
}

AddedToken parse_added_token(const nlohmann::json& j, const std::string& path) {
  json_require_object(j, path);
  json_check_known_keys(j, path, {"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"});
  AddedToken t;
  if (!j.contains("id")) json_error(json_field_path(path, "id"), "missing");
  t.id = json_token_id(j["id"], json_field_path(path, "id"));
  t.content = json_string(j, "content", path);
  t.single_word = json_bool_or(j, "single_word", path, false);
  t.lstrip = json_bool_or(j, "lstrip", path, false);
  t.rstrip = json_bool_or(j, "rstrip", path, false);
  t.normalized = json_bool_or(j, "normalized", path, true);
  t.special = json_bool_or(j, "special", path, false);
  return t;
}

const nlohmann::json& member(const nlohmann::json& j, const char* key) {
  static const nlohmann::json null;
  const auto it = j.find(key);
  return it == j.end() ? null : *it;
}

}  // namespace

std::unique_ptr<TokenizerJson> TokenizerJson::parse(const std::string& json_text) {
  check_depth(json_text);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    const size_t bracket = what.find("] ");
    throw TokenizerJsonError("(document): not valid JSON: " + (bracket == std::string::npos ? what : what.substr(bracket + 2)));
  }
  json_require_object(j, "(document)");
  json_check_known_keys(j, "", {"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "model",
                           "post_processor", "decoder"});
  std::unique_ptr<TokenizerJson> t(new TokenizerJson());
  if (!j.contains("model")) json_error("model", "missing");
  t->model_ = make_model(j["model"], "model");
  t->normalizer_ = make_normalizer(member(j, "normalizer"), "normalizer");
  t->pre_tokenizer_ = make_pre_tokenizer(member(j, "pre_tokenizer"), "pre_tokenizer");
  t->post_processor_ = make_post_processor(member(j, "post_processor"), "post_processor");
  t->decoder_ = make_decoder(member(j, "decoder"), "decoder");
  for (const char* section : {"normalizer", "pre_tokenizer", "model", "post_processor", "decoder"}) {
    if (j.contains(section)) collect_types(j[section], section, t->components_);
  }

  // Added tokens keep the id the Rust library gives them: the model's id of their content, else the next id after
  // the model's vocabulary and the added tokens before. A file whose ids differ is refused (the library would warn
  // and use its own).
  std::vector<AddedToken> added;
  const nlohmann::json& list = member(j, "added_tokens");
  if (!list.is_null() && !list.is_array()) json_error("added_tokens", "expected an array");
  const int model_size = t->model_->vocab_size();
  int max_added = -1;
  for (size_t i = 0; !list.is_null() && i < list.size(); ++i) {
    const std::string path = "added_tokens[" + std::to_string(i) + "]";
    AddedToken token = parse_added_token(list[i], path);
    if (token.content.empty()) continue;  // the library ignores empty tokens
    int expected = -1;
    const auto known = t->added_by_content_.find(token.content);
    if (known != t->added_by_content_.end()) {
      expected = known->second;
    } else if (t->model_->token_to_id(token.content) >= 0) {
      expected = t->model_->token_to_id(token.content);
    } else {
      expected = max_added >= model_size || model_size == 0 ? max_added + 1 : model_size;
    }
    if (token.id != expected) {
      const std::string* other = t->model_->id_to_token(token.id);
      std::string why = other ? "it is the id of the vocabulary's token '" + *other + "'"
                              : "the tokenizers library gives '" + token.content + "' id " + std::to_string(expected);
      if (t->model_->token_to_id(token.content) >= 0 && t->model_->token_to_id(token.content) != token.id) {
        why = "the vocabulary gives '" + token.content + "' id " + std::to_string(t->model_->token_to_id(token.content));
      }
      json_error(path + ".id", std::to_string(token.id) + " collides: " + why);
    }
    max_added = std::max(max_added, token.id);
    t->added_by_content_[token.content] = token.id;
    t->added_by_id_[token.id] = token.content;
    if (token.special) t->special_added_.insert(token.id);
    added.push_back(std::move(token));
  }
  t->added_ = AddedVocabulary(std::move(added), t->normalizer_.get());
  t->vocab_size_ = model_size;
  for (const auto& [id, content] : t->added_by_id_) t->vocab_size_ = std::max(t->vocab_size_, id + 1);
  if (t->vocab_size_ == 0) json_error("model.vocab", "empty");
  return t;
}

std::vector<int> TokenizerJson::encode(const std::string& text, bool split_special_tokens) const {
  require_utf8(text, "input text");
  std::vector<int> ids;
  std::vector<PreSplit> splits;
  for (Segment& seg : added_.extract_and_normalize(text, normalizer_.get(), split_special_tokens)) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    if (!pre_tokenizer_) {
      model_->tokenize(seg.text, ids);
      continue;
    }
    splits.clear();
    splits.push_back(PreSplit{std::move(seg.text), seg.starts_input});
    pre_tokenizer_->pre_tokenize(splits);
    for (const PreSplit& s : splits) {
      if (!s.text.empty()) model_->tokenize(s.text, ids);
    }
  }
  return ids;
}

std::vector<int> TokenizerJson::post_process(std::vector<int> ids) const {
  return post_processor_ ? post_processor_->process(std::move(ids)) : ids;
}

const std::string* TokenizerJson::id_to_token(int id) const {
  const auto it = added_by_id_.find(id);
  return it != added_by_id_.end() ? &it->second : model_->id_to_token(id);
}

int TokenizerJson::token_to_id(const std::string& token) const {
  const auto it = added_by_content_.find(token);
  return it != added_by_content_.end() ? it->second : model_->token_to_id(token);
}

std::string TokenizerJson::decode(const std::vector<int>& ids) const {
  std::vector<std::string> tokens;
  for (int id : ids) {
    if (const std::string* t = id_to_token(id)) tokens.push_back(*t);
  }
  if (decoder_) {
    decoder_->decode_chain(tokens);
    std::string out;
    for (const auto& t : tokens) out += t;
    return out;
  }
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
  return out;
}

SpecialIds special_ids_from_config(const TokenizerJson& tok, const std::string& config_text) {
  SpecialIds s;
  s.tokenizer = "tokenizer-json";
  if (config_text.empty()) {
    const auto guess = [&](int& slot, std::initializer_list<const char*> names) {
      for (const char* name : names) {
        const int id = tok.token_to_id(name);
        if (slot < 0 && id >= 0 && tok.is_special_added(id)) slot = id;
      }
    };
    guess(s.eos, {"</s>", "<|endoftext|>", "<|end_of_text|>", "<eos>"});
    guess(s.bos, {"<s>", "<|begin_of_text|>", "<bos>", "<|endoftext|>"});
    guess(s.unk, {"<unk>", "[UNK]", "<|unk|>"});
    guess(s.pad, {"<pad>", "[PAD]", "<|pad|>"});
    guess(s.mask, {"<mask>", "[MASK]"});
    guess(s.cls, {"[CLS]"});
    guess(s.sep, {"[SEP]"});
    // A masked-LM vocabulary without [CLS] / [SEP] (RoBERTa's): HF's tokenizer frames with <s> ... </s>.
    if (s.mask >= 0 && s.cls < 0) s.cls = s.bos;
    if (s.mask >= 0 && s.sep < 0) s.sep = s.eos;
  } else {
    check_depth(config_text);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(config_text);
    } catch (const nlohmann::json::exception&) {
      throw TokenizerJsonError("(document): not valid JSON");
    }
    json_require_object(j, "(document)");
    // A token as the config spells it: a string, or an AddedToken object {"content": ...}; "" when null/absent.
    const auto content_of = [](const nlohmann::json& v, const std::string& path) -> std::string {
      if (v.is_null()) return "";
      if (v.is_string()) return v.get<std::string>();
      if (v.is_object()) return json_string(v, "content", path);
      json_error(path, "expected a string or {\"content\": ...}");
    };
    const auto lookup = [&](const std::string& key) {
      const std::string token = content_of(member(j, key.c_str()), key);
      if (token.empty()) return -1;
      const int id = tok.token_to_id(token);
      if (id < 0) json_error(key, "'" + token + "' is not in tokenizer.json's vocabulary");
      return id;
    };
    s.bos = lookup("bos_token");
    s.eos = lookup("eos_token");
    s.unk = lookup("unk_token");
    s.pad = lookup("pad_token");
    s.mask = lookup("mask_token");
    s.cls = lookup("cls_token");
    s.sep = lookup("sep_token");
    const nlohmann::json& extra = member(j, "additional_special_tokens");
    if (!extra.is_null() && !extra.is_array()) json_error("additional_special_tokens", "expected an array");
    std::unordered_map<std::string, int> extras;
    for (size_t i = 0; !extra.is_null() && i < extra.size(); ++i) {
      const std::string path = "additional_special_tokens[" + std::to_string(i) + "]";
      const std::string token = content_of(extra[i], path);
      if (tok.token_to_id(token) < 0) json_error(path, "'" + token + "' is not in tokenizer.json's vocabulary");
      extras[token] = tok.token_to_id(token);
    }
    for (int n = 0;; ++n) {  // <extra_id_0>, <extra_id_1>, ... as long as they are listed
      const auto it = extras.find("<extra_id_" + std::to_string(n) + ">");
      if (it == extras.end()) break;
      s.sentinels.push_back(it->second);
    }
  }
  if (s.eos < 0) s.eos = s.sep;  // BERT: [SEP] separates documents
  return s;
}

}  // namespace lmzoo::hf
