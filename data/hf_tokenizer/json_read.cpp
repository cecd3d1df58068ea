// tokenizer.json field reads (json_read.h) with the field path in every error.
#include "data/hf_tokenizer/json_read.h"

#include <limits>

namespace lmzoo::hf {

void field_error(const std::string& path, const std::string& message) { throw TokenizerJsonError(path + ": " + message); }

std::string field_path(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

namespace {

const char* type_name(const nlohmann::json& j) { return j.type_name(); }

const nlohmann::json* find(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

const nlohmann::json& require_object(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) field_error(path, std::string("expected an object, got ") + type_name(j));
  return j;
}

void check_known_keys(const nlohmann::json& j, const std::string& path, std::initializer_list<const char*> known) {
  for (const auto& item : j.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || item.key() == k;
    if (!ok) field_error(field_path(path, item.key()), "unknown field (lmzoo does not read it; refused rather than ignored)");
  }
}

void refuse_non_null(const nlohmann::json& j, const std::string& path, const char* key, const std::string& reason) {
  if (find(j, key)) field_error(field_path(path, key), reason);
}

std::string string_field(const nlohmann::json& j, const std::string& path, const char* key, const std::string& def) {
  const nlohmann::json* v = find(j, key);
  if (!v) return def;
  if (!v->is_string()) field_error(field_path(path, key), std::string("expected a string, got ") + type_name(*v));
  return v->get<std::string>();
}

bool bool_field(const nlohmann::json& j, const std::string& path, const char* key, bool def) {
  const nlohmann::json* v = find(j, key);
  if (!v) return def;
  if (!v->is_boolean()) field_error(field_path(path, key), std::string("expected true or false, got ") + type_name(*v));
  return v->get<bool>();
}

int64_t uint_field(const nlohmann::json& j, const std::string& path, const char* key, int64_t def, int64_t max) {
  const nlohmann::json* v = find(j, key);
  if (!v) return def;
  if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > max) {
    field_error(field_path(path, key), "expected an integer in [0, " + std::to_string(max) + "]");
  }
  return v->get<int64_t>();
}

std::string required_string(const nlohmann::json& j, const std::string& path, const char* key) {
  if (!find(j, key)) field_error(field_path(path, key), "missing (a string is required)");
  return string_field(j, path, key, "");
}

std::string type_field(const nlohmann::json& j, const std::string& path) {
  require_object(j, path);
  return required_string(j, path, "type");
}

int id_value(const nlohmann::json& j, const std::string& path) {
  constexpr int64_t kMax = std::numeric_limits<int>::max() - 1;
  if (!j.is_number_integer() || j.get<int64_t>() < 0 || j.get<int64_t>() > kMax) {
    field_error(path, "expected a token id (an integer in [0, " + std::to_string(kMax) + "])");
  }
  return int(j.get<int64_t>());
}

}  // namespace lmzoo::hf
