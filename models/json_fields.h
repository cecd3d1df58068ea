// Strict reading of a config's JSON object against its struct's defaults: unknown keys, and values of the wrong
// JSON type (2.5 for an integer, "yes" for a boolean), are refused naming the field; and the range check the
// configs' validate() apply to each field.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace lmzoo {

// Throws std::invalid_argument "PREFIX: FIELD must be an integer, got 2.5" (or "unknown field 'x'") unless every
// key of J is a key of DEFAULTS holding a value of the same kind: integer (non-negative where the default is
// unsigned), number, boolean, string, or an array of strings.
void require_json_fields(const nlohmann::json& j, const nlohmann::json& defaults, const std::string& prefix);

// Throws std::invalid_argument "PREFIX: NAME must be between LO and HI, got VALUE" unless LO <= VALUE <= HI (NaN
// is outside every range).
template <typename T>
void require_between(T value, T lo, T hi, const std::string& prefix, const std::string& name) {
  if (value >= lo && value <= hi) return;
  std::ostringstream message;
  message << prefix << ": " << name << " must be between " << lo << " and " << hi << ", got " << value;
  throw std::invalid_argument(message.str());
}

}  // namespace lmzoo
