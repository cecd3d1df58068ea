// ModelConfig validation and strict JSON parsing.
#include "models/config.h"

#include <cmath>
#include <fstream>
#include <set>
#include <stdexcept>

namespace lmzoo {

namespace {
void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("model config: " + message);
}
}  // namespace

void ModelConfig::validate() const {
  require(format_version >= 1 && format_version <= kModelConfigFormatVersion,
          "format_version " + std::to_string(format_version) + " is not supported by this lmzoo (max " +
              std::to_string(kModelConfigFormatVersion) + ")");
  const bool t5 = arch == Arch::kT5;
  require(vocab_size > 0, "vocab_size must be positive");
  require(n_layer > 0, "n_layer must be positive");
  require(n_decoder_layer >= 0, "n_decoder_layer must be >= 0 (0 means n_layer)");
  require(t5 || n_decoder_layer == 0, "n_decoder_layer is for arch t5 only (arch is " + enum_name(arch) + ")");
  require(n_head > 0, "n_head must be positive");
  require(n_kv_heads >= 0 && (n_kv_heads == 0 || n_head % n_kv_heads == 0),
          "n_kv_heads (" + std::to_string(n_kv_heads) + ") must divide n_head (" + std::to_string(n_head) +
              "); 0 means n_head");
  require(head_dim >= 0, "head_dim must be >= 0 (0 means d_model / n_head)");
  if (head_dim == 0) {
    require(d_model > 0 && d_model % n_head == 0,
            "d_model (" + std::to_string(d_model) + ") must be a positive multiple of n_head (" +
                std::to_string(n_head) + ")");
  } else {
    require(d_model > 0, "d_model must be positive");
    require(t5 || head_dim * n_head == d_model,
            "head_dim * n_head must equal d_model (" + std::to_string(d_model) + ") for arch " + enum_name(arch) +
                "; other head sizes are for arch t5 only");
  }
  require(d_ff >= 0, "d_ff must be >= 0 (0 derives it from d_model)");
  require(max_seq_len > 0, "max_seq_len must be positive");
  require(type_vocab_size > 0, "type_vocab_size must be positive");
  require(dropout >= 0.0 && dropout < 1.0, "dropout must be in [0, 1)");
  require(norm_eps > 0.0, "norm_eps must be positive");
  require(position != Position::kRope || head_size() % 2 == 0,
          "position 'rope' needs an even head size (got " + std::to_string(head_size()) + ")");
  require(position != Position::kSinusoidal || d_model % 2 == 0, "position 'sinusoidal' needs an even d_model");
  require(rope_base > 1.0, "rope_base must be > 1");
  require(vocab_multiple >= 1, "vocab_multiple must be >= 1 (1: no padding)");
  require(relative_buckets >= 4 && relative_buckets % 2 == 0,
          "relative_buckets must be an even number >= 4 (half of them per direction in the encoder)");
  require(relative_max_distance > relative_buckets / 2,
          "relative_max_distance (" + std::to_string(relative_max_distance) + ") must exceed relative_buckets / 2 (" +
              std::to_string(relative_buckets / 2) + ", the exactly bucketed distances)");
  require(t5 == (init == InitScheme::kT5), t5 ? "arch t5 needs init 't5' (got '" + enum_name(init) + "')"
                                               : "init 't5' is for arch t5 only (arch is " + enum_name(arch) + ")");
  require(labels.empty() || arch == Arch::kBert, "labels (a classification head) need arch bert");
  require(labels.empty() || labels.size() >= 2, "a classifier needs at least 2 labels");
  require(std::set<std::string>(labels.begin(), labels.end()).size() == labels.size(), "labels must be distinct");
}

int64_t ModelConfig::ff_dim() const {
  if (d_ff > 0) return d_ff;
  if (!gated_ffn()) return 4 * d_model;
  const int64_t m = kGatedFeedForwardMultiple;
  return (8 * d_model / 3 + m - 1) / m * m;  // LLaMA: 2/3 of 4 d_model, so gated and plain cost the same
}

double ModelConfig::attention_scale() const { return arch == Arch::kT5 ? 1.0 : 1.0 / std::sqrt(double(head_size())); }

ModelConfig model_config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("model config: expected a JSON object");
  const nlohmann::json known = ModelConfig{};
  for (const auto& item : j.items()) {
    if (!known.contains(item.key())) throw std::invalid_argument("model config: unknown field '" + item.key() + "'");
  }
  ModelConfig config;
  try {
    config = j.get<ModelConfig>();
  } catch (const std::invalid_argument& e) {  // an enum field's name outside its table
    throw std::invalid_argument("model config: " + std::string(e.what()));
  }
  // Before version 3, d_ff 0 meant 4 * d_model for every activation.
  if (config.format_version < 3 && config.d_ff == 0) config.d_ff = 4 * config.d_model;
  return config;
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
