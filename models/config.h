// Model configuration: one plain struct for every family (its fields declared once, in model_fields.h), JSON
// round trip and validate().
// Leaves out: training hyper-parameters (train/train_config.h).
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/model_enums.h"
#include "models/model_fields.h"

namespace lmzoo {

// 2: T5 fields (n_decoder_layer, head_dim, relative_buckets, relative_max_distance).
// 3: variant fields (n_kv_heads, rope_base, final_norm, vocab_multiple); d_ff 0 means 8/3 d_model for
// gated feed-forwards (4 d_model in older files). Older files still load.
constexpr int kModelConfigFormatVersion = 3;
// Derived gated feed-forward widths (8/3 d_model) are rounded up to a multiple of this.
constexpr int64_t kGatedFeedForwardMultiple = 64;

// The largest value of each size field. They cover every published model and keep every product of sizes
// (vocab x d_model, layers x d_model x d_ff, any tensor's element count) far inside int64, so that nothing
// computed from a validated config wraps; whether such a model fits in memory is models/memory_estimate.h's.
namespace model_limits {
constexpr int64_t kMaxVocab = 2147483647;  // 2^31 - 1: token ids are 32-bit ints in the tokenizers
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxHeads = 4096;
constexpr int64_t kMaxWidth = 65536;          // d_model, head_dim
constexpr int64_t kMaxFeedForward = 1048576;  // d_ff
constexpr int64_t kMaxSeqLen = 16777216;      // 2^24 positions
constexpr int64_t kMaxTypeVocab = 1024;
constexpr int64_t kMaxBuckets = 4096;
constexpr int64_t kMaxVocabMultiple = 65536;
constexpr int64_t kMaxLabels = 65536;
constexpr double kMaxRopeBase = 1e12;
}  // namespace model_limits

struct ModelConfig {
#define LMZOO_DECLARE_MODEL_FIELD(type, name, default_value, flag, shape, help) type name = default_value;
  LMZOO_MODEL_CONFIG_FIELDS(LMZOO_DECLARE_MODEL_FIELD)
#undef LMZOO_DECLARE_MODEL_FIELD

  int64_t ff_dim() const;
  int64_t kv_heads() const { return n_kv_heads > 0 ? n_kv_heads : n_head; }
  int64_t kv_dim() const { return kv_heads() * head_size(); }  // width of k and of v (all kv heads)
  int64_t padded_vocab() const { return (vocab_size + vocab_multiple - 1) / vocab_multiple * vocab_multiple; }
  int64_t head_size() const { return head_dim > 0 ? head_dim : d_model / n_head; }
  int64_t attn_dim() const { return n_head * head_size(); }  // width of q (all heads)
  // Whether the position scheme's encodings stop at max_seq_len (learned, sinusoidal and rope tables).
  bool positions_from_table() const;
  int64_t decoder_layers() const { return n_decoder_layer > 0 ? n_decoder_layer : n_layer; }
  bool gated_ffn() const { return is_gated(activation); }
  // T5 drops out the feed-forward's hidden activations too (between c_fc and c_proj).
  bool ffn_hidden_dropout() const { return arch == Arch::kT5; }
  // alibi and relative positions add a bias to the attention scores.
  // Factor on the attention scores q.k: 1/sqrt(hs), except T5, which folds it into the q init.
  double attention_scale() const;
  // Throws std::invalid_argument naming the first bad field: each field within its range (model_limits), then
  // the fields' relations.
  void validate() const;

 private:
  void check_ranges() const;
};

// Every field by its name; a missing field takes its default (model_config_from_json refuses unknown ones).
void to_json(nlohmann::json& j, const ModelConfig& config);
void from_json(const nlohmann::json& j, ModelConfig& config);

// Parses a config JSON object, rejecting unknown keys and newer format versions.
ModelConfig model_config_from_json(const nlohmann::json& j);
ModelConfig load_model_config(const std::string& path);

// BASE (a preset's or a config file's) with the fields named in GIVEN (ModelConfig field names) set to ASKED's,
// keeping BASE's proportions where a given size is one others derive from: a new d_model derives d_ff again; a t5's
// new d_model or n_head derives its head size again (d_model / n_head), and its new n_layer sets both stacks unless
// n_decoder_layer is given; a new n_head keeps BASE's n_kv_heads only while they divide it (else plain heads).
ModelConfig resized(ModelConfig base, const ModelConfig& asked, const std::set<std::string>& given);

}  // namespace lmzoo
