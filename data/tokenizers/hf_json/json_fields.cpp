// Field readers for tokenizer.json components: one check per JSON type, the path in every message. Leaves out
// the lenient forms serde would also accept (a component without "type" matched by its fields).
#include "data/tokenizers/hf_json/json_fields.h"

#include <cstring>
#include <limits>

#include "data/unicode/utf8.h"

namespace lmzoo::hf {

namespace {

const nlohmann::json* find_field(const nlohmann::json& j, const char* key, const std::string& path) {
  json_require_object(j, path);
  const auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

const nlohmann::json& require_field(const nlohmann::json& j, const char* key, const std::string& path) {
  const nlohmann::json* f = find_field(j, key, path);
  if (!f) json_error(path, std::string("missing field \"") + key + "\"");
  return *f;
}

[[noreturn]] void wrong_type(const nlohmann::json& value, const char* key, const std::string& path,
                             const char* expected) {
  json_error(path + "." + key, std::string("expected ") + expected + ", got " + value.type_name() +
                                   (value.is_primitive() ? " " + value.dump() : ""));
}

// The field KEY when present and not null.
const nlohmann::json* find_value(const nlohmann::json& j, const char* key, const std::string& path) {
  const nlohmann::json* v = find_field(j, key, path);
  return v && !v->is_null() ? v : nullptr;
}

}  // namespace

void json_error(const std::string& path, const std::string& reason) { throw TokenizerJsonError(path + ": " + reason); }

std::string json_type(const nlohmann::json& j, const std::string& path) {
  const nlohmann::json& t = require_field(j, "type", path);
  if (!t.is_string()) wrong_type(t, "type", path, "a string");
  return t.get<std::string>();
}

bool json_bool(const nlohmann::json& j, const char* key, const std::string& path) {
  const nlohmann::json& v = require_field(j, key, path);
  if (!v.is_boolean()) wrong_type(v, key, path, "true or false");
  return v.get<bool>();
}

std::optional<bool> json_optional_bool(const nlohmann::json& j, const char* key, const std::string& path) {
  const nlohmann::json* v = find_field(j, key, path);
  if (!v || v->is_null()) return std::nullopt;
  if (!v->is_boolean()) wrong_type(*v, key, path, "true, false or null");
  return v->get<bool>();
}

std::string json_string(const nlohmann::json& j, const char* key, const std::string& path) {
  const nlohmann::json& v = require_field(j, key, path);
  if (!v.is_string()) wrong_type(v, key, path, "a string");
  std::string s = v.get<std::string>();
  if (find_invalid_utf8(s) != std::string::npos) json_error(path + "." + key, "not UTF-8 text");
  return s;
}

std::optional<std::string> json_optional_string(const nlohmann::json& j, const char* key, const std::string& path) {
  const nlohmann::json* v = find_field(j, key, path);
  if (!v || v->is_null()) return std::nullopt;
  return json_string(j, key, path);
}

const nlohmann::json& json_array(const nlohmann::json& j, const char* key, const std::string& path) {
  const nlohmann::json& v = require_field(j, key, path);
  if (!v.is_array()) wrong_type(v, key, path, "an array");
  return v;
}

std::string json_char(const nlohmann::json& j, const char* key, const std::string& path) {
  std::string s = json_string(j, key, path);
  size_t chars = 0;
  for (char c : s) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  if (chars != 1) json_error(path + "." + key, "expected exactly one character, got \"" + s + "\"");
  return s;
}

std::string json_string_or(const nlohmann::json& j, const char* key, const std::string& path, const std::string& def) {
  return find_value(j, key, path) ? json_string(j, key, path) : def;
}

bool json_bool_or(const nlohmann::json& j, const char* key, const std::string& path, bool def) {
  return find_value(j, key, path) ? json_bool(j, key, path) : def;
}

int64_t json_uint_or(const nlohmann::json& j, const char* key, const std::string& path, int64_t def, int64_t max) {
  const nlohmann::json* v = find_value(j, key, path);
  if (!v) return def;
  if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > max) {
    json_error(json_field_path(path, key), "expected an integer in [0, " + std::to_string(max) + "]");
  }
  return v->get<int64_t>();
}

std::string json_field_path(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

const nlohmann::json& json_require_object(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) json_error(path, "expected a JSON object, got " + std::string(j.type_name()));
  return j;
}

void json_check_known_keys(const nlohmann::json& j, const std::string& path, std::initializer_list<const char*> known) {
  for (const auto& item : j.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || item.key() == k;
    if (!ok) {
      json_error(json_field_path(path, item.key()), "unknown field (lmzoo does not read it; refused rather than ignored)");
    }
  }
}

void json_refuse_non_null(const nlohmann::json& j, const std::string& path, const char* key, const std::string& reason) {
  if (find_value(j, key, path)) json_error(json_field_path(path, key), reason);
}

int json_token_id(const nlohmann::json& j, const std::string& path) {
  constexpr int64_t kMax = std::numeric_limits<int>::max() - 1;
  if (!j.is_number_integer() || j.get<int64_t>() < 0 || j.get<int64_t>() > kMax) {
    json_error(path, "expected a token id (an integer in [0, " + std::to_string(kMax) + "])");
  }
  return int(j.get<int64_t>());
}

std::string json_pattern(const nlohmann::json& j, const char* key, const std::string& path) {
  const nlohmann::json& v = require_field(j, key, path);
  const std::string where = path + "." + key;
  if (!v.is_object() || v.size() != 1) {
    json_error(where, "expected {\"String\": ...} or {\"Regex\": ...}, got " + v.dump());
  }
  const std::string kind = v.begin().key();
  if (kind != "String" && kind != "Regex") {
    json_error(where, "unknown pattern kind \"" + kind + "\", expected String or Regex");
  }
  const std::string text = json_string(v, kind.c_str(), where);
  return kind == "String" ? regex_escape(text) : text;
}

std::string regex_escape(const std::string& literal) {
  std::string out;
  out.reserve(literal.size());
  for (char c : literal) {
    if (c != '\0' && std::strchr("\\.+*?()|[]{}^$#&-~", c)) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace lmzoo::hf
