// The switch matrix of issue 5 for the tests: every position scheme crossed with every activation, the
// other switches (norm, norm position, kv heads, bias, tying, final norm, vocab padding, dropout; gpt: q/k/v-only
// biases, attention window) cycled
// so that each of their values meets several positions and activations.
#pragma once
#include <string>
#include <vector>

#include "tests/model_fixtures.h"

namespace lmzoo::test {

struct Variant {
  std::string name;
  ModelConfig config;
};

// GPT-NeoX's switches (issue 28): parallel residual and partial rotary (rope_fraction), each with and without
// the other, crossed with a few of the other switches.
inline void add_neox_variants(std::vector<Variant>& all) {
  struct Neox {
    double rope_fraction;
    bool parallel;
    const char* position;
    const char* activation;
    const char* norm;
    int64_t kv_heads;
    double dropout;
  };
  const Neox neox[] = {{0.25, true, "rope", "gelu", "layernorm", 0, 0.0},   // Pythia's shape (2 of 8 dims rotated)
                       {0.5, false, "rope", "swiglu", "rmsnorm", 2, 0.0},   // partial rotary alone
                       {1.0, true, "rope", "gelu-tanh", "layernorm", 1, 0.1},  // parallel, full rotary, dropout
                       {1.0, true, "learned", "relu", "rmsnorm", 0, 0.0}};  // parallel without rope
  for (const auto& n : neox) {
    ModelConfig c = tiny_gpt_config();
    c.rope_fraction = n.rope_fraction;
    c.parallel_residual = n.parallel;
    c.position = parse_enum<Position>(n.position);
    c.activation = parse_enum<Activation>(n.activation);
    c.norm = parse_enum<NormKind>(n.norm);
    c.n_kv_heads = n.kv_heads;
    c.dropout = n.dropout;
    c.bias = n.parallel;
    c.tie_embeddings = !n.parallel;
    all.push_back({"gpt " + std::string(n.position) + " rope-fraction " + std::to_string(n.rope_fraction) +
                       (n.parallel ? " parallel-residual " : " sequential ") + n.activation + " " + n.norm + " kv " +
                       std::to_string(c.kv_heads()),
                   c});
  }
}

inline std::vector<Variant> switch_matrix(Arch arch) {
  const int64_t kv_heads[] = {0, 2, 1};  // multi-head, grouped-query (2 of 4), multi-query
  std::vector<Variant> all;
  int i = 0;
  for (const auto& position_entry : EnumTable<Position>::entries) {  // every value, as the tables list them
    for (const auto& activation_entry : EnumTable<Activation>::entries) {
      const std::string position = position_entry.name, activation = activation_entry.name;
      ModelConfig c = arch == Arch::kBert ? tiny_bert_config(99, 32, 2, 4, 16) : tiny_gpt_config();
      c.position = parse_enum<Position>(position);
      c.activation = parse_enum<Activation>(activation);
      c.norm = parse_enum<NormKind>(i % 2 ? "rmsnorm" : "layernorm");
      c.norm_position = parse_enum<NormPosition>((i / 2) % 2 ? "post" : "pre");
      c.n_kv_heads = kv_heads[i % 3];
      c.bias = (i / 3) % 2 == 1;
      c.tie_embeddings = (i / 5) % 2 == 0;
      c.final_norm = i % 7 != 3;
      c.vocab_multiple = i % 4 == 0 ? 64 : 1;
      c.dropout = i % 5 == 1 ? 0.1 : 0.0;
      c.init = parse_enum<InitScheme>(i % 2 ? "bert" : "gpt2");
      if (arch == Arch::kGpt) {  // gpt-only switches: Qwen2's q/k/v biases, Mistral's window (3 < the tests' lengths)
        c.qkv_bias = !c.bias && i % 4 == 2;
        c.attention_window = i % 3 == 1 ? 3 : 0;
      }
      all.push_back({enum_name(arch) + " " + position + " " + activation + " " + enum_name(c.norm) + " " + enum_name(c.norm_position) + "-norm kv " +
                         std::to_string(c.kv_heads()) + (c.bias ? " bias" : "") + (c.tie_embeddings ? " tied" : "") +
                         (c.final_norm ? "" : " no-final-norm") + " vocab*" + std::to_string(c.vocab_multiple) +
                         (c.qkv_bias ? " qkv-bias" : "") +
                         (c.attention_window ? " window " + std::to_string(c.attention_window) : ""),
                     c});
      ++i;
    }
  }
  if (arch == Arch::kGpt) add_neox_variants(all);
  return all;
}

// T5 with every position scheme, each with another activation and the other switches cycled.
inline std::vector<Variant> t5_switch_matrix() {
  const std::vector<std::string> activations = {"relu", "gelu", "gelu-tanh", "silu", "swiglu", "geglu"};
  const std::vector<std::string> positions = {"relative", "sinusoidal", "rope", "alibi", "learned", "none"};
  const int64_t kv_heads[] = {0, 2, 1};
  std::vector<Variant> all;
  for (size_t i = 0; i < activations.size(); ++i) {
    ModelConfig c = tiny_t5_config();
    c.activation = parse_enum<Activation>(activations[i]);
    c.position = parse_enum<Position>(positions[i]);
    c.d_ff = 0;
    c.n_kv_heads = kv_heads[i % 3];
    c.norm = parse_enum<NormKind>(i % 2 ? "layernorm" : "rmsnorm");
    c.norm_position = parse_enum<NormPosition>(i == 4 ? "post" : "pre");
    c.final_norm = i != 3;
    c.bias = i == 2;
    c.tie_embeddings = i % 2 == 0;
    c.vocab_multiple = i == 1 ? 64 : 1;
    all.push_back({"t5 " + positions[i] + " " + activations[i] + " kv " + std::to_string(c.kv_heads()) + " " + enum_name(c.norm),
                   c});
  }
  return all;
}

}  // namespace lmzoo::test
