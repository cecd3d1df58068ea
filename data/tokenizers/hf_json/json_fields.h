// Reading tokenizer.json component objects with error messages that name the field's path: "type", required
// fields and optional ones (absent or null: nullopt or a default) of each JSON type, token ids, unknown keys
// refused; all fail with TokenizerJsonError. Leaves out: any component's meaning.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "data/tokenizers/hf_json/text_pipeline.h"  // TokenizerJsonError

namespace lmzoo::hf {

// Throws TokenizerJsonError "PATH: REASON".
[[noreturn]] void json_error(const std::string& path, const std::string& reason);

// J's "type" string; throws if J is not an object or has no string "type".
std::string json_type(const nlohmann::json& j, const std::string& path);

// Field KEY of the object J (PATH names J): required, or optional where absent or null gives the default / nullopt.
bool json_bool(const nlohmann::json& j, const char* key, const std::string& path);
std::optional<bool> json_optional_bool(const nlohmann::json& j, const char* key, const std::string& path);
std::string json_string(const nlohmann::json& j, const char* key, const std::string& path);
std::optional<std::string> json_optional_string(const nlohmann::json& j, const char* key, const std::string& path);
const nlohmann::json& json_array(const nlohmann::json& j, const char* key, const std::string& path);
// A required field holding exactly one character (Metaspace's replacement), returned as UTF-8.
std::string json_char(const nlohmann::json& j, const char* key, const std::string& path);

// Optional fields with a default: absent or null gives DEF; the wrong type is refused. A uint must be an integer in
// [0, MAX].
std::string json_string_or(const nlohmann::json& j, const char* key, const std::string& path, const std::string& def);
bool json_bool_or(const nlohmann::json& j, const char* key, const std::string& path, bool def);
int64_t json_uint_or(const nlohmann::json& j, const char* key, const std::string& path, int64_t def, int64_t max);

// PATH + "." + KEY (or KEY alone when PATH is empty).
std::string json_field_path(const std::string& path, const std::string& key);
// J must be an object; throws naming PATH otherwise.
const nlohmann::json& json_require_object(const nlohmann::json& j, const std::string& path);
// Refuses any key of the object J outside KNOWN (naming PATH.key).
void json_check_known_keys(const nlohmann::json& j, const std::string& path, std::initializer_list<const char*> known);
// A non-null KEY must not be present (lmzoo cannot honour it): throws "PATH.KEY: REASON" when it is.
void json_refuse_non_null(const nlohmann::json& j, const std::string& path, const char* key, const std::string& reason);
// J as a token id: an integer in [0, 2^31 - 2].
int json_token_id(const nlohmann::json& j, const std::string& path);

// A pattern field {"String": s} or {"Regex": r} (Split's and Replace's): the regex Oniguruma is given, with a
// String escaped as Rust's regex::escape does. Throws for another shape.
std::string json_pattern(const nlohmann::json& j, const char* key, const std::string& path);

// Rust's regex::escape: a backslash before each of \ . + * ? ( ) | [ ] { } ^ $ # & - ~
std::string regex_escape(const std::string& literal);

}  // namespace lmzoo::hf
