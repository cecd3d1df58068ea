// config.json field access and the spellings several Hugging Face families share (activations, dropouts, rope).
#include "models/hf/fields.h"

namespace lmzoo::hf {

int64_t HfFields::integer(const std::string& key) const {
  if (!has(key)) throw HfFormatError("config.json has no '" + key + "'");
  if (!j_.at(key).is_number_integer()) throw HfFormatError("config.json: '" + key + "' is not an integer");
  return j_.at(key).get<int64_t>();
}

int64_t HfFields::integer(const std::string& key, int64_t fallback) const {
  return has(key) ? integer(key) : fallback;
}

double HfFields::number(const std::string& key, double fallback) const {
  if (!has(key)) return fallback;
  if (!j_.at(key).is_number()) throw HfFormatError("config.json: '" + key + "' is not a number");
  return j_.at(key).get<double>();
}

bool HfFields::boolean(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  if (!j_.at(key).is_boolean()) throw HfFormatError("config.json: '" + key + "' is not true or false");
  return j_.at(key).get<bool>();
}

std::string HfFields::text(const std::string& key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  if (!j_.at(key).is_string()) throw HfFormatError("config.json: '" + key + "' is not a string");
  return j_.at(key).get<std::string>();
}

void HfFields::require_bool(const std::string& key, bool fallback, bool expected) const {
  if (boolean(key, fallback) != expected) {
    throw HfFormatError(std::string("config.json: ") + key + " " + (expected ? "false" : "true") +
                        " is not supported (lmzoo implements " + (expected ? "true" : "false") + ")");
  }
}

void HfFields::require_text(const std::string& key, const std::string& fallback, const std::string& expected) const {
  const std::string value = text(key, fallback);
  if (value != expected) {
    throw HfFormatError("config.json: " + key + " '" + value + "' is not supported (lmzoo implements '" + expected +
                        "')");
  }
}

Activation activation_of(const std::string& key, const std::string& name) {
  if (name == "gelu") return Activation::kGelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Activation::kGeluTanh;
  if (name == "relu") return Activation::kRelu;
  if (name == "silu" || name == "swish") return Activation::kSilu;
  throw HfFormatError("config.json: " + key + " '" + name + "' is not supported (gelu, gelu_new, relu, silu)");
}

std::string hf_activation_name(Activation a) {
  switch (a) {
    case Activation::kGelu: return "gelu";
    case Activation::kGeluTanh: return "gelu_new";
    case Activation::kRelu: return "relu";
    case Activation::kSilu: return "silu";
    case Activation::kGeglu: return "gelu_new";
    case Activation::kSwiglu: return "silu";
  }
  throw std::logic_error("activation outside its table");
}

double merged_dropout(const HfFields& f, const std::vector<std::string>& keys, std::vector<std::string>& notes,
                      double fallback) {
  double value = f.number(keys.front(), fallback);
  for (const auto& key : keys) {
    const double other = f.number(key, value);
    if (other != value) {
      notes.push_back("dropout " + std::to_string(value) + " (from " + keys.front() + ") also replaces " + key +
                      " " + std::to_string(other) + ": lmzoo has one dropout rate (--dropout changes it)");
    }
  }
  return value;
}

const json* default_rope_object(const HfFields& f, const std::string& key) {
  if (!f.has(key)) return nullptr;
  const json& value = f.raw().at(key);
  auto refuse = [&] {
    throw HfFormatError("config.json: " + key + " " + value.dump() +
                        " is not supported (lmzoo implements the default, unscaled rope: null or "
                        "{\"rope_type\": \"default\"})");
  };
  if (!value.is_object()) refuse();
  for (const auto& [name, member] : value.items()) {  // transformers 5's per-layer-type form: {"full_attention": {...}}
    if (member.is_object()) {
      throw HfFormatError("config.json: " + key + " per layer type (" + name +
                          ", ...) is not supported (lmzoo has one rope for every layer)");
    }
  }
  for (const char* type_key : {"rope_type", "type"}) {
    if (value.contains(type_key) && !value.at(type_key).is_null() && value.at(type_key) != "default") refuse();
  }
  return &value;
}

double agreed_rope_setting(const HfFields& f, const std::vector<std::string>& keys, const std::string& field,
                           double fallback) {
  struct Spelling {
    std::string name;
    const json* value;
  };
  std::vector<Spelling> found;
  for (const auto& key : keys) {
    if (f.has(key)) found.push_back({key, &f.raw().at(key)});
  }
  for (const char* object : {"rope_parameters", "rope_scaling"}) {
    const json* rope = default_rope_object(f, object);
    if (rope && rope->contains(field) && !rope->at(field).is_null()) {
      found.push_back({std::string(object) + "." + field, &rope->at(field)});
    }
  }
  for (const auto& s : found) {
    if (!s.value->is_number()) throw HfFormatError("config.json: " + s.name + " is not a number");
    if (s.value->get<double>() != found.front().value->get<double>()) {
      throw HfFormatError("config.json: " + s.name + " " + s.value->dump() + " differs from " + found.front().name +
                          " " + found.front().value->dump() +
                          " (transformers 4.x and 5.x read different keys; a file must agree with itself)");
    }
  }
  return found.empty() ? fallback : found.front().value->get<double>();
}

std::string literal_number(double value) { return json(value).dump(); }

void require_twin(bool ok, const ModelConfig& c, const std::string& family, const std::string& reason) {
  if (!ok) {
    throw HfFormatError("this " + enum_name(c.arch) + " model has no Hugging Face twin: " + family + " needs " +
                        reason);
  }
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace lmzoo::hf
