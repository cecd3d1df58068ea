// Field-by-field type checks of a config object against the JSON of its defaults.
#include "models/json_fields.h"

#include <stdexcept>

namespace lmzoo {

namespace {

// The kind a field must hold ("an integer", ...), or "" when VALUE is of the kind of EXPECTED.
std::string kind_missing(const nlohmann::json& value, const nlohmann::json& expected) {
  if (expected.is_number_unsigned()) return value.is_number_unsigned() ? "" : "a non-negative integer";
  if (expected.is_number_integer()) return value.is_number_integer() ? "" : "an integer";
  if (expected.is_number()) return value.is_number() ? "" : "a number";
  if (expected.is_boolean()) return value.is_boolean() ? "" : "true or false";
  if (expected.is_string()) return value.is_string() ? "" : "a string";
  if (expected.is_array()) {
    if (!value.is_array()) return "an array of strings";
    for (const auto& item : value) {
      if (!item.is_string()) return "an array of strings";
    }
    return "";
  }
  return "";
}

}  // namespace

void require_json_fields(const nlohmann::json& j, const nlohmann::json& defaults, const std::string& prefix) {
  if (!j.is_object()) throw std::invalid_argument(prefix + ": expected a JSON object");
  for (const auto& item : j.items()) {
    if (!defaults.contains(item.key())) throw std::invalid_argument(prefix + ": unknown field '" + item.key() + "'");
    const std::string kind = kind_missing(item.value(), defaults.at(item.key()));
    if (!kind.empty()) {
      throw std::invalid_argument(prefix + ": " + item.key() + " must be " + kind + ", got " +
                                  item.value().dump().substr(0, 40));
    }
  }
}

}  // namespace lmzoo
