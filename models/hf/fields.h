// What every Hugging Face family file reads config.json with: typed field access that names the field in its errors,
// the activation, dropout and rope spellings several families share, and the "no Hugging Face twin" refusal.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/config.h"
#include "models/hf_config.h"

namespace lmzoo::hf {

using nlohmann::json;

// Field access with one-line errors naming the field. A field set to null counts as absent.
class HfFields {
 public:
  explicit HfFields(const json& j) : j_(j) {}

  bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  int64_t integer(const std::string& key) const;  // required
  int64_t integer(const std::string& key, int64_t fallback) const;
  double number(const std::string& key, double fallback) const;
  bool boolean(const std::string& key, bool fallback) const;
  std::string text(const std::string& key, const std::string& fallback) const;
  // Refuses a value other than EXPECTED for a field that changes the math.
  void require_bool(const std::string& key, bool fallback, bool expected) const;
  void require_text(const std::string& key, const std::string& fallback, const std::string& expected) const;
  const json& raw() const { return j_; }

 private:
  const json& j_;
};

// hidden_act / activation_function values and their lmzoo activation (ungated); KEY names the field in errors.
Activation activation_of(const std::string& key, const std::string& name);

// The HF spelling of an activation (a gated one: its inner activation).
std::string hf_activation_name(Activation a);

// The dropout lmzoo uses for all of KEYS (it has one); a note when they differ.
double merged_dropout(const HfFields& f, const std::vector<std::string>& keys, std::vector<std::string>& notes,
                      double fallback = 0.1);

// The rope settings object KEY (rope_scaling, or transformers 5.x's rope_parameters) when present and the default,
// unscaled rope; anything else (a string, a list, a scaled type) is refused naming KEY. nullptr when absent.
const json* default_rope_object(const HfFields& f, const std::string& key);

// A setting that transformers 4.x and 5.x files spell in several places: the top-level KEYS, then FIELD of the
// default rope objects rope_parameters (5.x) and rope_scaling (its older name). The first spelling present is the
// value (FALLBACK when none is); any other present one must equal it, else the file is refused naming both.
double agreed_rope_setting(const HfFields& f, const std::vector<std::string>& keys, const std::string& field,
                           double fallback);

// The shortest text that reads back as VALUE.
std::string literal_number(double value);

// Throws "this ARCH model has no Hugging Face twin: FAMILY needs REASON" unless OK.
void require_twin(bool ok, const ModelConfig& c, const std::string& family, const std::string& reason);

bool starts_with(const std::string& s, const std::string& prefix);
bool ends_with(const std::string& s, const std::string& suffix);

}  // namespace lmzoo::hf
