// Model configuration: one plain struct for every family, JSON round trip and validate().
// Leaves out: training hyper-parameters (train/train_config.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmzoo {

constexpr int kModelConfigFormatVersion = 1;

struct ModelConfig {
  int format_version = kModelConfigFormatVersion;
  std::string arch = "gpt";          // gpt (decoder-only) | bert (encoder-only)
  int64_t vocab_size = 0;            // 0: taken from the tokenizer
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t d_model = 128;
  int64_t d_ff = 0;                  // 0: 4 * d_model
  int64_t max_seq_len = 64;          // context length (learned position table size)
  int64_t type_vocab_size = 2;       // bert: token-type (segment) embeddings; unused by gpt
  double dropout = 0.0;              // attention, residual and embedding dropout
  bool bias = false;                 // biases in linear layers and LayerNorm
  bool tie_embeddings = true;        // LM head shares the token embedding matrix
  std::string norm = "layernorm";    // layernorm | rmsnorm
  std::string norm_position = "pre";  // pre | post
  double norm_eps = 1e-5;
  std::string activation = "gelu";   // relu | gelu | gelu-tanh | silu
  std::string position = "learned";  // learned | none
  std::string init = "gpt2";         // gpt2 (scaled residual projections) | bert (all N(0, 0.02))
  std::vector<std::string> labels;   // bert: non-empty makes a sequence classifier over these labels

  int64_t ff_dim() const { return d_ff > 0 ? d_ff : 4 * d_model; }
  int64_t head_dim() const { return d_model / n_head; }
  // Throws std::invalid_argument naming the first bad field.
  void validate() const;
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ModelConfig, format_version, arch, vocab_size, n_layer,
                                                n_head, d_model, d_ff, max_seq_len, type_vocab_size, dropout, bias,
                                                tie_embeddings, norm, norm_position, norm_eps,
                                                activation, position, init, labels)

// Parses a config JSON object, rejecting unknown keys and newer format versions.
ModelConfig model_config_from_json(const nlohmann::json& j);
ModelConfig load_model_config(const std::string& path);

}  // namespace lmzoo
