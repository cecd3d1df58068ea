// ModelConfig validation and strict JSON parsing.
#include "models/config.h"

#include <fstream>
#include <set>
#include <stdexcept>

namespace lmzoo {

namespace {
void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("model config: " + message);
}
void require_one_of(const std::string& field, const std::string& value, const std::set<std::string>& allowed) {
  if (allowed.count(value)) return;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : "|") + a;
  throw std::invalid_argument("model config: " + field + " '" + value + "' is not one of " + list);
}
}  // namespace

void ModelConfig::validate() const {
  require(format_version >= 1 && format_version <= kModelConfigFormatVersion,
          "format_version " + std::to_string(format_version) + " is not supported by this lmzoo (max " +
              std::to_string(kModelConfigFormatVersion) + ")");
  require_one_of("arch", arch, {"gpt", "bert"});
  require(vocab_size > 0, "vocab_size must be positive");
  require(n_layer > 0, "n_layer must be positive");
  require(n_head > 0, "n_head must be positive");
  require(d_model > 0 && d_model % n_head == 0,
          "d_model (" + std::to_string(d_model) + ") must be a positive multiple of n_head (" +
              std::to_string(n_head) + ")");
  require(d_ff >= 0, "d_ff must be >= 0 (0 means 4 * d_model)");
  require(max_seq_len > 0, "max_seq_len must be positive");
  require(type_vocab_size > 0, "type_vocab_size must be positive");
  require(dropout >= 0.0 && dropout < 1.0, "dropout must be in [0, 1)");
  require(norm_eps > 0.0, "norm_eps must be positive");
  require_one_of("norm", norm, {"layernorm", "rmsnorm"});
  require_one_of("norm_position", norm_position, {"pre", "post"});
  require_one_of("activation", activation, {"relu", "gelu", "gelu-tanh", "silu"});
  require_one_of("position", position, {"learned", "none"});
  require_one_of("init", init, {"gpt2", "bert"});
  require(labels.empty() || arch == "bert", "labels (a classification head) need arch bert");
  require(labels.empty() || labels.size() >= 2, "a classifier needs at least 2 labels");
  require(std::set<std::string>(labels.begin(), labels.end()).size() == labels.size(), "labels must be distinct");
}

ModelConfig model_config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("model config: expected a JSON object");
  const nlohmann::json known = ModelConfig{};
  for (const auto& item : j.items()) {
    if (!known.contains(item.key())) throw std::invalid_argument("model config: unknown field '" + item.key() + "'");
  }
  return j.get<ModelConfig>();
}

ModelConfig load_model_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open config file " + path);
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(path + " is not valid JSON (" + std::string(e.what()).substr(0, 120) + ")");
  }
  return model_config_from_json(j);
}

}  // namespace lmzoo
