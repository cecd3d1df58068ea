// ModelConfig validation and strict JSON parsing.
#include "models/config.h"

#include <cmath>
#include <fstream>
#include <set>
#include <stdexcept>

#include "models/json_fields.h"
#include "models/layers/positions.h"

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
  check_ranges();
  require(t5 || n_decoder_layer == 0, "n_decoder_layer is for arch t5 only (arch is " + enum_name(arch) + ")");
  require(n_kv_heads == 0 || n_head % n_kv_heads == 0,
          "n_kv_heads (" + std::to_string(n_kv_heads) + ") must divide n_head (" + std::to_string(n_head) +
              "); 0 means n_head");
  if (head_dim == 0) {
    require(d_model % n_head == 0,
            "d_model (" + std::to_string(d_model) + ") must be a positive multiple of n_head (" +
                std::to_string(n_head) + ")");
  } else {
    require(t5 || head_dim * n_head == d_model,
            "head_dim * n_head must equal d_model (" + std::to_string(d_model) + ") for arch " + enum_name(arch) +
                "; other head sizes are for arch t5 only");
  }
  require(position != Position::kRope || head_size() % 2 == 0,
          "position 'rope' needs an even head size (got " + std::to_string(head_size()) + ")");
  require(position != Position::kSinusoidal || d_model % 2 == 0, "position 'sinusoidal' needs an even d_model");
  require(relative_buckets % 2 == 0, "relative_buckets must be even (half of them per direction in the encoder)");
  require(relative_max_distance > relative_buckets / 2,
          "relative_max_distance (" + std::to_string(relative_max_distance) + ") must exceed relative_buckets / 2 (" +
              std::to_string(relative_buckets / 2) + ", the exactly bucketed distances)");
  require(t5 == (init == InitScheme::kT5), t5 ? "arch t5 needs init 't5' (got '" + enum_name(init) + "')"
                                               : "init 't5' is for arch t5 only (arch is " + enum_name(arch) + ")");
  const bool gpt = arch == Arch::kGpt;
  require(gpt || !qkv_bias, "qkv_bias is for arch gpt only (arch is " + enum_name(arch) + ")");
  require(gpt || !parallel_residual, "parallel_residual is for arch gpt only (arch is " + enum_name(arch) + ")");
  require(!parallel_residual || norm_position == NormPosition::kPre, "parallel_residual needs norm_position pre");
  require(gpt || attention_window == 0, "attention_window is for arch gpt only (arch is " + enum_name(arch) + ")");
  require(rope_fraction == 1.0 || position == Position::kRope, "rope_fraction other than 1 needs position rope");
  const double rotated = rope_fraction * double(head_size());
  require(position != Position::kRope || (rotated == std::floor(rotated) && int64_t(rotated) % 2 == 0 && rotated >= 2),
          "rope_fraction " + std::to_string(rope_fraction) + " of head size " + std::to_string(head_size()) +
              " must give an even, whole number of rotated dimensions");
  require(position_offset == 0 || (arch == Arch::kBert && position == Position::kLearned),
          "position_offset is for arch bert with learned positions only");
  require(type_vocab_size > 0 || arch == Arch::kBert, "type_vocab_size 0 (no token types) is for arch bert only");
  require(labels.empty() || arch == Arch::kBert, "labels (a classification head) need arch bert");
  require(labels.empty() || labels.size() >= 2, "a classifier needs at least 2 labels");
  require(int64_t(labels.size()) <= model_limits::kMaxLabels,
          "a classifier has at most " + std::to_string(model_limits::kMaxLabels) + " labels");
  require(std::set<std::string>(labels.begin(), labels.end()).size() == labels.size(), "labels must be distinct");
}

void ModelConfig::check_ranges() const {
  namespace lim = model_limits;
  auto between = [](int64_t value, int64_t lo, int64_t hi, const char* name) {
    require_between(value, lo, hi, "model config", name);
  };
  between(vocab_size, 1, lim::kMaxVocab, "vocab_size");
  between(n_layer, 1, lim::kMaxLayers, "n_layer");
  between(n_decoder_layer, 0, lim::kMaxLayers, "n_decoder_layer");
  between(n_head, 1, lim::kMaxHeads, "n_head");
  between(n_kv_heads, 0, n_head, "n_kv_heads");
  between(d_model, 1, lim::kMaxWidth, "d_model");
  between(head_dim, 0, lim::kMaxWidth, "head_dim");
  between(d_ff, 0, lim::kMaxFeedForward, "d_ff");
  between(max_seq_len, 1, lim::kMaxSeqLen, "max_seq_len");
  between(type_vocab_size, 0, lim::kMaxTypeVocab, "type_vocab_size");
  between(position_offset, 0, lim::kMaxSeqLen, "position_offset");
  between(attention_window, 0, lim::kMaxSeqLen, "attention_window");
  require(rope_fraction > 0.0 && rope_fraction <= 1.0, "rope_fraction must be in (0, 1], got " + std::to_string(rope_fraction));
  between(relative_buckets, 4, lim::kMaxBuckets, "relative_buckets");
  between(relative_max_distance, 1, lim::kMaxSeqLen, "relative_max_distance");
  between(vocab_multiple, 1, lim::kMaxVocabMultiple, "vocab_multiple");
  require(dropout >= 0.0 && dropout < 1.0, "dropout must be in [0, 1), got " + std::to_string(dropout));
  require(norm_eps > 0.0 && norm_eps <= 1.0, "norm_eps must be in (0, 1], got " + std::to_string(norm_eps));
  require(rope_base > 1.0 && rope_base <= lim::kMaxRopeBase, "rope_base must be in (1, 1e12], got " + std::to_string(rope_base));
}

bool ModelConfig::positions_from_table() const { return position_scheme(position).bounded_by_table; }

void to_json(nlohmann::json& j, const ModelConfig& config) {
  j = nlohmann::json::object();
#define LMZOO_MODEL_FIELD_TO_JSON(type, name, default_value, flag, shape, help) j[#name] = config.name;
  LMZOO_MODEL_CONFIG_FIELDS(LMZOO_MODEL_FIELD_TO_JSON)
#undef LMZOO_MODEL_FIELD_TO_JSON
}

void from_json(const nlohmann::json& j, ModelConfig& config) {
  const ModelConfig defaults;
#define LMZOO_MODEL_FIELD_FROM_JSON(type, name, default_value, flag, shape, help) \
  config.name = j.value(#name, defaults.name);
  LMZOO_MODEL_CONFIG_FIELDS(LMZOO_MODEL_FIELD_FROM_JSON)
#undef LMZOO_MODEL_FIELD_FROM_JSON
}

int64_t ModelConfig::ff_dim() const {
  if (d_ff > 0) return d_ff;
  if (!gated_ffn()) return 4 * d_model;
  const int64_t m = kGatedFeedForwardMultiple;
  return (8 * d_model / 3 + m - 1) / m * m;  // LLaMA: 2/3 of 4 d_model, so gated and plain cost the same
}

double ModelConfig::attention_scale() const { return arch == Arch::kT5 ? 1.0 : 1.0 / std::sqrt(double(head_size())); }

ModelConfig model_config_from_json(const nlohmann::json& j) {
  require_json_fields(j, nlohmann::json(ModelConfig{}), "model config");
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

ModelConfig resized(ModelConfig base, const ModelConfig& asked, const std::set<std::string>& given) {
  auto is_given = [&given](const char* field) { return given.count(field) > 0; };
  if (base.arch == Arch::kT5) {
    if (is_given("n_layer")) base.n_decoder_layer = 0;
    if (is_given("d_model") || is_given("n_head")) base.head_dim = 0;
  }
  if (is_given("d_model")) base.d_ff = 0;
  if (is_given("n_head") && base.n_kv_heads > 0 && asked.n_head % base.n_kv_heads != 0) base.n_kv_heads = 0;
#define LMZOO_COPY_GIVEN_FIELD(type, name, default_value, flag, shape, help) \
  if (is_given(#name)) base.name = asked.name;
  LMZOO_MODEL_CONFIG_FIELDS(LMZOO_COPY_GIVEN_FIELD)
#undef LMZOO_COPY_GIVEN_FIELD
  return base;
}

}  // namespace lmzoo
