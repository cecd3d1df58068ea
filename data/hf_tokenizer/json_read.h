// Typed reads of the fields of the tokenizer.json parts outside the text pipeline (model, added tokens, decoder,
// post-processor), naming the field in every error; unknown fields refused. Leaves out: what a field means.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

#include "data/hf_tokenizer/text_pipeline.h"  // TokenizerJsonError

namespace lmzoo::hf {

// Throws TokenizerJsonError "PATH: MESSAGE".
[[noreturn]] void field_error(const std::string& path, const std::string& message);

// PATH + "." + KEY (or KEY alone when PATH is empty).
std::string field_path(const std::string& path, const std::string& key);

// J must be an object; throws naming PATH otherwise.
const nlohmann::json& require_object(const nlohmann::json& j, const std::string& path);
// Refuses any key of the object J outside KNOWN (naming PATH.key).
void check_known_keys(const nlohmann::json& j, const std::string& path, std::initializer_list<const char*> known);
// A non-null key must not be present (lmzoo cannot honour it): throws "PATH.KEY: REASON" when it is.
void refuse_non_null(const nlohmann::json& j, const std::string& path, const char* key, const std::string& reason);

// The field KEY of the object J (at PATH) as a string / bool / non-negative integer / number; absent or null gives
// DEFAULT; any other type is refused.
std::string string_field(const nlohmann::json& j, const std::string& path, const char* key, const std::string& def);
bool bool_field(const nlohmann::json& j, const std::string& path, const char* key, bool def);
int64_t uint_field(const nlohmann::json& j, const std::string& path, const char* key, int64_t def, int64_t max);
// The field KEY that must be present with a string value.
std::string required_string(const nlohmann::json& j, const std::string& path, const char* key);
// The "type" of a component object (required, a string).
std::string type_field(const nlohmann::json& j, const std::string& path);
// A token id: an integer in [0, 2^31 - 2].
int id_value(const nlohmann::json& j, const std::string& path);

}  // namespace lmzoo::hf
