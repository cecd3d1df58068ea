// Model configuration: one plain struct for every family, JSON round trip and validate().
// Leaves out: training hyper-parameters (train/train_config.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmzoo {

// 2: T5 fields (n_decoder_layer, head_dim, relative_buckets, relative_max_distance); version-1 files still load.
constexpr int kModelConfigFormatVersion = 2;

struct ModelConfig {
  int format_version = kModelConfigFormatVersion;
  std::string arch = "gpt";          // gpt (decoder-only) | bert (encoder-only) | t5 (encoder-decoder)
  int64_t vocab_size = 0;            // 0: taken from the tokenizer
  int64_t n_layer = 4;               // t5: encoder layers
  int64_t n_decoder_layer = 0;       // t5 only: decoder layers (0: n_layer)
  int64_t n_head = 4;
  int64_t d_model = 128;
  int64_t head_dim = 0;              // per-head size (T5's d_kv); 0: d_model / n_head. Other values: t5 only
  int64_t d_ff = 0;                  // 0: 4 * d_model
  int64_t max_seq_len = 64;          // context length (learned position table size; t5: input length)
  int64_t type_vocab_size = 2;       // bert: token-type (segment) embeddings; unused by gpt
  double dropout = 0.0;              // attention, residual and embedding dropout
  bool bias = false;                 // biases in linear layers and LayerNorm
  bool tie_embeddings = true;        // LM head shares the token embedding matrix
  std::string norm = "layernorm";    // layernorm | rmsnorm
  std::string norm_position = "pre";  // pre | post
  double norm_eps = 1e-5;
  // relu | gelu | gelu-tanh | silu; t5 also: geglu (gelu-tanh gate, T5 v1.1 "gated-gelu") | swiglu
  // (silu gate). Gated: act(c_fc x) * c_fc_lin x -> c_proj.
  std::string activation = "gelu";
  std::string position = "learned";  // learned | none (gpt, bert) | relative (t5: bucketed bias per head)
  int64_t relative_buckets = 32;     // relative position buckets (t5)
  int64_t relative_max_distance = 128;  // distances from here on share the last bucket (t5)
  std::string init = "gpt2";         // gpt2 (scaled residual projections) | bert (all N(0, 0.02)) | t5
  std::vector<std::string> labels;   // bert: non-empty makes a sequence classifier over these labels

  int64_t ff_dim() const { return d_ff > 0 ? d_ff : 4 * d_model; }
  int64_t head_size() const { return head_dim > 0 ? head_dim : d_model / n_head; }
  int64_t attn_dim() const { return n_head * head_size(); }  // width of q, k, v (all heads)
  int64_t decoder_layers() const { return n_decoder_layer > 0 ? n_decoder_layer : n_layer; }
  bool gated_ffn() const { return activation == "geglu" || activation == "swiglu"; }
  // Factor on the attention scores q.k: 1/sqrt(hs), except T5, which folds it into the q init.
  double attention_scale() const;
  // Throws std::invalid_argument naming the first bad field.
  void validate() const;
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ModelConfig, format_version, arch, vocab_size, n_layer,
                                                n_decoder_layer, n_head, d_model, head_dim, d_ff, max_seq_len,
                                                type_vocab_size, dropout, bias, tie_embeddings, norm, norm_position,
                                                norm_eps, activation, position, relative_buckets,
                                                relative_max_distance, init, labels)

// Parses a config JSON object, rejecting unknown keys and newer format versions.
ModelConfig model_config_from_json(const nlohmann::json& j);
ModelConfig load_model_config(const std::string& path);

}  // namespace lmzoo
