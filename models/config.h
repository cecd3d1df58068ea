// Model configuration: one plain struct for every family, JSON round trip and validate().
// Leaves out: training hyper-parameters (train/train_config.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/model_enums.h"

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
  int format_version = kModelConfigFormatVersion;
  Arch arch = Arch::kGpt;
  int64_t vocab_size = 0;            // 0: taken from the tokenizer
  int64_t n_layer = 4;               // t5: encoder layers
  int64_t n_decoder_layer = 0;       // t5 only: decoder layers (0: n_layer)
  int64_t n_head = 4;
  int64_t n_kv_heads = 0;            // key/value heads (grouped-query attention; 1: multi-query); 0: n_head
  int64_t d_model = 128;
  int64_t head_dim = 0;              // per-head size (T5's d_kv); 0: d_model / n_head. Other values: t5 only
  int64_t d_ff = 0;                  // 0: 4 * d_model, gated: 8/3 * d_model rounded up to a multiple of 64
  int64_t max_seq_len = 64;          // context length (learned position table size; t5: input length)
  int64_t type_vocab_size = 2;       // bert: token-type (segment) embeddings; unused by gpt
  double dropout = 0.0;              // attention, residual and embedding dropout
  bool bias = false;                 // biases in linear layers and LayerNorm
  bool tie_embeddings = true;        // LM head shares the token embedding matrix
  NormKind norm = NormKind::kLayerNorm;
  NormPosition norm_position = NormPosition::kPre;
  double norm_eps = 1e-5;
  bool final_norm = true;            // a norm after the last block (gpt, t5; bert pre-norm)
  // Gated (geglu: T5 v1.1's "gated-gelu", swiglu): act(c_fc x) * c_fc_lin x -> c_proj.
  Activation activation = Activation::kGelu;
  Position position = Position::kLearned;
  double rope_base = 10000.0;        // rope: frequencies base^(-2i / head size)
  int64_t relative_buckets = 32;     // relative position buckets (t5)
  int64_t relative_max_distance = 128;  // distances from here on share the last bucket (t5)
  InitScheme init = InitScheme::kGpt2;
  std::vector<std::string> labels;   // bert: non-empty makes a sequence classifier over these labels
  int64_t vocab_multiple = 1;        // embedding and output rows padded to a multiple; logits keep vocab_size

  int64_t ff_dim() const;
  int64_t kv_heads() const { return n_kv_heads > 0 ? n_kv_heads : n_head; }
  int64_t kv_dim() const { return kv_heads() * head_size(); }  // width of k and of v (all kv heads)
  int64_t padded_vocab() const { return (vocab_size + vocab_multiple - 1) / vocab_multiple * vocab_multiple; }
  int64_t head_size() const { return head_dim > 0 ? head_dim : d_model / n_head; }
  int64_t attn_dim() const { return n_head * head_size(); }  // width of q (all heads)
  // learned, sinusoidal and rope positions come from tables of max_seq_len rows, which bound the length.
  bool positions_from_table() const {
    return position == Position::kLearned || position == Position::kSinusoidal || position == Position::kRope;
  }
  int64_t decoder_layers() const { return n_decoder_layer > 0 ? n_decoder_layer : n_layer; }
  bool gated_ffn() const { return is_gated(activation); }
  // T5 drops out the feed-forward's hidden activations too (between c_fc and c_proj).
  bool ffn_hidden_dropout() const { return arch == Arch::kT5; }
  // alibi and relative positions add a bias to the attention scores.
  bool position_bias() const { return position == Position::kAlibi || position == Position::kRelative; }
  // Factor on the attention scores q.k: 1/sqrt(hs), except T5, which folds it into the q init.
  double attention_scale() const;
  // Throws std::invalid_argument naming the first bad field: each field within its range (model_limits), then
  // the fields' relations.
  void validate() const;

 private:
  void check_ranges() const;
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ModelConfig, format_version, arch, vocab_size, n_layer,
                                                n_decoder_layer, n_head, n_kv_heads, d_model, head_dim, d_ff,
                                                max_seq_len, type_vocab_size, dropout, bias, tie_embeddings, norm,
                                                norm_position, norm_eps, final_norm, activation, position, rope_base,
                                                relative_buckets, relative_max_distance, init, labels, vocab_multiple)

// Parses a config JSON object, rejecting unknown keys and newer format versions.
ModelConfig model_config_from_json(const nlohmann::json& j);
ModelConfig load_model_config(const std::string& path);

}  // namespace lmzoo
