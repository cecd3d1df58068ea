// Building blocks of the TorchScript exports: a writer of TorchScript source for lmzoo's layers (norms,
// linears, feed-forward, self/cross-attention with grouped-query heads and rotary positions, pre/post-norm
// blocks, the position schemes) and the module skeleton every export shares. Leaves out: the families' forward passes (torchscript_export*.cpp), dropout (eval only).
#pragma once
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <torch/script.h>
#include <torch/torch.h>

#include "models/config.h"

namespace lmzoo::script {

// Parameter name in the exported module: "h.0.attn.c_attn.weight" -> "h_0_attn_c_attn_weight".
std::string scripted_name(const std::string& parameter_name);
// A double as a TorchScript literal that reads back to the same double.
std::string literal(double value);

// A torch::jit::Module of type `type_name` holding model's parameters (flat names, CPU copies), the
// attribute config_json (the config as a JSON string), the buffer tokenizer_model (uint8) and the fixed
// position tables of the config (sinusoid_table; rope_cos, rope_sin; alibi_slopes).
torch::jit::Module new_module(const std::string& type_name, torch::nn::Module& model, const ModelConfig& config,
                              const std::string& tokenizer_model);

// Writes TorchScript source against the weights of one model. Expressions name weights self.<scripted>;
// prefixes are dotted parameter-name prefixes ("h.0.attn"). The generated code assumes the local
// variables B and T (batch, query length) and, for cross-attention, S (memory length); with rope, the
// tables rope_cos and rope_sin that position_setup() writes. A block reads and rewrites the residual
// stream x and uses the temporaries a, qkv, kv, q, k, v, att, y.
class SourceWriter {
 public:
  SourceWriter(const ModelConfig& config, const torch::nn::Module& model);

  void def(const std::string& signature);    // starts a method: "def <signature>:"
  void line(const std::string& statement);  // one statement in the current method (4-space indent)
  void line(const std::string& statement, const std::string& shape);  // ... with a shape comment
  std::string str() const;                  // all methods' source
  // Defines the methods on module one define() each, in order, so a method may call those before it.
  void define(torch::jit::Module& module) const;

  bool has(const std::string& name) const { return names_.count(name) > 0; }
  std::string param(const std::string& name) const;  // "self.<scripted name>"
  std::string norm(const std::string& prefix, const std::string& x) const;
  std::string linear(const std::string& prefix, const std::string& x) const;
  std::string activation(const std::string& x) const;  // the config's activation (a gate's, when gated)
  std::string feed_forward(const std::string& prefix, const std::string& x) const;
  // Write the attention lines; return the output projection's expression (B, T, C). blocked: a bool
  // tensor expression broadcastable to (B, nh, T, S), true where not to attend ("" for none); bias: an
  // additive score bias expression ("" for none).
  std::string self_attention(const std::string& prefix, const std::string& x, const std::string& blocked,
                             const std::string& bias);
  std::string cross_attention(const std::string& prefix, const std::string& x, const std::string& memory,
                              const std::string& blocked);
  // A method "<name>(self, T: int, S: int) -> Tensor" giving the (1, nh, T, S) T5 relative position bias
  // of the bucket table `weight` for queries 0 .. T-1 and keys 0 .. S-1, as RelativePositionBiasImpl.
  void relative_bias_method(const std::string& name, const std::string& weight, bool bidirectional);
  // Lines for the config's position scheme at positions 0 .. T-1 on `device`: learned and sinusoidal
  // positions are added to x (learned from the table `learned_table`, sinusoidal to embeddings scaled by
  // sqrt(C), except T5's unit-scale ones); rope defines rope_cos and rope_sin;
  // alibi (-slope * |query - key|, either direction) and relative define position_bias (relative through
  // relative_method, which the caller defines first with relative_bias_method). Returns the score bias
  // expression ("" for none).
  std::string position_setup(const std::string& learned_table, const std::string& device,
                             const std::string& relative_method = "_position_bias");
  // logits[..., :vocab_size] when the vocabulary is padded, else logits.
  std::string unpadded(const std::string& logits) const;
  // Encoder / decoder-only block (TransformerBlock) and encoder-decoder decoder block (DecoderBlock).
  void block(const std::string& prefix, const std::string& blocked, const std::string& bias);
  void decoder_block(const std::string& prefix, const std::string& blocked, const std::string& bias,
                     const std::string& memory, const std::string& memory_blocked);

 private:
  // x = x + sublayer(norm(x)) (pre-norm) or x = norm(x + sublayer(x)) (post-norm).
  void residual(const std::string& norm_prefix, const std::function<std::string(const std::string&)>& sublayer);
  // From q (B, nh, T, hs), k and v (B, n_kv, S, hs): y (B, T, nh * hs).
  void attend(const std::string& blocked, const std::string& bias);
  // Rotates the (B, heads, T, hs) variable `name` in place with rope_cos / rope_sin.
  void rotate(const std::string& name);

  ModelConfig config_;
  std::set<std::string> names_;
  std::vector<std::string> methods_;
};

}  // namespace lmzoo::script
