// Reading one tokenizer.json component object with error messages that name the field's path: "type", required
// and optional fields of each JSON type, all failing with TokenizerJsonError. Leaves out: any component's meaning.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "data/hf_tokenizer/text_pipeline.h"  // TokenizerJsonError

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

// A pattern field {"String": s} or {"Regex": r} (Split's and Replace's): the regex Oniguruma is given, with a
// String escaped as Rust's regex::escape does. Throws for another shape.
std::string json_pattern(const nlohmann::json& j, const char* key, const std::string& path);

// Rust's regex::escape: a backslash before each of \ . + * ? ( ) | [ ] { } ^ $ # & - ~
std::string regex_escape(const std::string& literal);

}  // namespace lmzoo::hf
