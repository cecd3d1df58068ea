// The tokenizer.json post-processors applied to one sequence, as the Rust library's process with add_special_tokens.
#include "data/tokenizers/hf_json/post_processors.h"

#include <nlohmann/json.hpp>

#include "data/tokenizers/hf_json/json_fields.h"

namespace lmzoo::hf {

namespace {

class WrapProcessor : public PostProcessor {  // Bert, Roberta and TemplateProcessing's single: before + ids + after
 public:
  WrapProcessor(std::vector<int> before, std::vector<int> after) : before_(std::move(before)), after_(std::move(after)) {}
  std::vector<int> process(std::vector<int> ids) const override {
    std::vector<int> out = before_;
    out.insert(out.end(), ids.begin(), ids.end());
    out.insert(out.end(), after_.begin(), after_.end());
    return out;
  }

 private:
  std::vector<int> before_, after_;
};

class SequenceProcessor : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  std::vector<int> process(std::vector<int> ids) const override {
    for (const auto& p : parts_) ids = p->process(std::move(ids));
    return ids;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

// ["[CLS]", 101] -> 101
int token_pair_id(const nlohmann::json& j, const std::string& path, const char* key) {
  const std::string p = json_field_path(path, key);
  const auto it = j.find(key);
  if (it == j.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_string()) {
    json_error(p, "expected [token, id]");
  }
  return json_token_id((*it)[1], p + "[1]");
}

std::unique_ptr<PostProcessor> make_template(const nlohmann::json& j, const std::string& path) {
  json_check_known_keys(j, path, {"type", "single", "pair", "special_tokens"});
  const std::string spath = json_field_path(path, "special_tokens");
  const auto specials = j.find("special_tokens");
  if (specials != j.end() && !specials->is_null() && !specials->is_object()) json_error(spath, "expected an object");
  const std::string single_path = json_field_path(path, "single");
  const auto single = j.find("single");
  if (single == j.end() || !single->is_array()) json_error(single_path, "expected an array of pieces");
  std::vector<int> before, after;
  bool seen_sequence = false;
  for (size_t i = 0; i < single->size(); ++i) {
    const auto& piece = (*single)[i];
    const std::string ipath = single_path + "[" + std::to_string(i) + "]";
    if (!piece.is_object() || piece.size() != 1) json_error(ipath, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    if (piece.contains("Sequence")) {
      const auto& seq = piece["Sequence"];
      if (!seq.is_object() || seq.value("id", std::string("A")) != "A") {
        json_error(ipath + ".Sequence.id", "a single-sequence template can only hold sequence A");
      }
      if (seen_sequence) json_error(ipath, "sequence A appears twice");
      seen_sequence = true;
      continue;
    }
    if (!piece.contains("SpecialToken") || !piece["SpecialToken"].is_object()) {
      json_error(ipath, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
    const std::string name = json_string(piece["SpecialToken"], "id", ipath + ".SpecialToken");
    if (specials == j.end() || !specials->is_object() || !specials->contains(name)) {
      json_error(spath, "no entry for '" + name + "', which " + ipath + " names");
    }
    const auto& entry = (*specials)[name];
    const std::string epath = spath + "[\"" + name + "\"].ids";
    if (!entry.is_object() || !entry.contains("ids") || !entry["ids"].is_array()) json_error(epath, "expected an array of ids");
    for (size_t k = 0; k < entry["ids"].size(); ++k) {
      (seen_sequence ? after : before).push_back(json_token_id(entry["ids"][k], epath + "[" + std::to_string(k) + "]"));
    }
  }
  if (!seen_sequence) json_error(single_path, "holds no {\"Sequence\": {\"id\": \"A\"}}");
  return std::make_unique<WrapProcessor>(std::move(before), std::move(after));
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& j, const std::string& path) {
  if (j.is_null()) return nullptr;
  const std::string type = json_type(j, path);
  if (type == "TemplateProcessing") return make_template(j, path);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    json_check_known_keys(j, path, {"type", "sep", "cls", "trim_offsets", "add_prefix_space"});
    return std::make_unique<WrapProcessor>(std::vector<int>{token_pair_id(j, path, "cls")},
                                           std::vector<int>{token_pair_id(j, path, "sep")});
  }
  if (type == "ByteLevel") {  // offsets only: the ids are unchanged
    json_check_known_keys(j, path, {"type", "add_prefix_space", "trim_offsets", "use_regex"});
    return std::make_unique<WrapProcessor>(std::vector<int>{}, std::vector<int>{});
  }
  if (type == "Sequence") {
    json_check_known_keys(j, path, {"type", "processors"});
    const std::string ppath = json_field_path(path, "processors");
    const auto p = j.find("processors");
    if (p == j.end() || !p->is_array()) json_error(ppath, "expected an array of post-processors");
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (size_t i = 0; i < p->size(); ++i) {
      auto part = make_post_processor((*p)[i], ppath + "[" + std::to_string(i) + "]");
      if (!part) json_error(ppath + "[" + std::to_string(i) + "]", "null is not a post-processor");
      parts.push_back(std::move(part));
    }
    return std::make_unique<SequenceProcessor>(std::move(parts));
  }
  json_error(json_field_path(path, "type"), "'" + type + "' is not supported (TemplateProcessing, BertProcessing, "
                                        "RobertaProcessing, ByteLevel, Sequence)");
}

}  // namespace lmzoo::hf
