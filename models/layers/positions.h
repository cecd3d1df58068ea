// Position schemes, chosen in one place: position_scheme() says what each scheme needs from the model that uses it,
// and add_position_encoding / PositionTables / AttentionBias compute it (sinusoidal encodings (Vaswani et al.),
// rotary embeddings (RoPE, rotate-half layout as HF LLaMA), ALiBi slopes and biases (Press et al.), T5-style
// relative buckets). Every family (gpt, bert, t5) builds its position modules from position_scheme(), so a new
// scheme is a new enumerator (model_enums.h) and a case in each switch of positions.cpp.
// Leaves out: T5's bucket function (relative_position.h).
#pragma once
#include <vector>

#include <torch/torch.h>

#include "models/config.h"
#include "models/layers/relative_position.h"

namespace lmzoo {

// What a position scheme needs from the model that uses it.
struct PositionScheme {
  bool learned_table = false;     // a (max_seq_len, C) embedding added to the token embeddings
  bool fixed_tables = false;      // PositionTables buffers (sinusoid, rotary or ALiBi slopes), shared by the layers
  bool score_bias = false;        // an additive (1, nh, T, S) attention score bias (AttentionBias; t5: per stack)
  bool bounded_by_table = false;  // positions at or past max_seq_len have no encoding
};
PositionScheme position_scheme(Position position);

// (length, dim) float: row p holds sin(p w_0), cos(p w_0), sin(p w_1), cos(p w_1), ... with
// w_i = 10000^(-2i / dim) (sinusoidal_frequencies). Computed in float64, rounded once. The models add it
// to token embeddings scaled by sqrt(d_model), as Vaswani et al. do.
torch::Tensor sinusoidal_table(int64_t length, int64_t dim);
std::vector<double> sinusoidal_frequencies(int64_t dim);
// x * embedding_scale + table rows offset .. offset + T - 1 (or POSITIONS' rows, (B, T) int64): x (B, T, C),
// table (L, C) -> (B, T, C).
torch::Tensor add_sinusoidal(const torch::Tensor& x, const torch::Tensor& table, int64_t offset,
                             double embedding_scale, const torch::Tensor& positions = torch::Tensor());

// Rotary tables (length, rd) each, float, rd the rotated dimensions of a head (rotary_dims): angle
// p * base^(-2i / rd) for i < rd / 2, the same angles repeated for the second half. Computed in float64, rounded
// once.
struct RotaryTables {
  torch::Tensor cos, sin;
};
RotaryTables rotary_tables(int64_t length, int64_t rotary_dims, double base);
std::vector<double> rotary_frequencies(int64_t rotary_dims, double base);  // base^(-2i / rd), i < rd/2
// The rotated dimensions of each head: rope_fraction * head_size (GPT-NeoX's rotary_ndims; validate() keeps it
// even and whole).
int64_t rotary_dims(const ModelConfig& config);
// x: (B, T, nh, hs) at positions offset .. offset + T - 1, with rd = the tables' width <= hs: the first rd dims
// become x cos + rotate_half(x) sin, where rotate_half(x) = [-x2, x1] for the halves x1, x2 of those rd dims;
// the other hs - rd dims pass through (GPT-NeoX's partial rotary). POSITIONS (B, T) int64, when given, are each
// token's position instead (packed rows, where positions restart at every example).
torch::Tensor apply_rotary(const torch::Tensor& x, const RotaryTables& tables, int64_t offset,
                           const torch::Tensor& positions = torch::Tensor());

// ALiBi slopes for n heads: the geometric sequence starting at 2^(-8/n) for a power of two; otherwise
// those of the nearest lower power of two p, then every other slope of 2p heads for the rest.
std::vector<double> alibi_slopes(int64_t n_head);

// The fixed (computed, not learned) position tables a config uses, as registered buffers, so that they move with
// the model (.to(device), once) and are shared by its layers: sinusoid (L, C); rope_cos, rope_sin (L, rd); alibi
// slopes (nh,). Derived from the config, so they are never saved or loaded (is_serializable() is false) and
// checkpoints hold only learned weights. A model holds one when position_tables_needed(config).
class PositionTablesImpl : public torch::nn::Module {
 public:
  explicit PositionTablesImpl(const ModelConfig& config);
  bool is_serializable() const override { return false; }

  torch::Tensor sinusoid;      // sinusoidal only
  RotaryTables rotary;         // rope only
  torch::Tensor alibi_slopes;  // alibi only
};
TORCH_MODULE(PositionTables);

inline bool position_tables_needed(const ModelConfig& config) { return position_scheme(config.position).fixed_tables; }

// x (B, T, C): token embeddings at positions offset .. offset + T - 1, plus the scheme's additive encoding: the
// learned TABLE's rows, or (sinusoidal) x * sinusoid_scale plus TABLES' sinusoid rows. Schemes that act inside
// attention (rope, alibi, relative, none) leave x as it is.
// POSITIONS (B, T) int64, when given, are each token's position instead of offset .. offset + T - 1.
torch::Tensor add_position_encoding(Position position, const torch::Tensor& x, const torch::nn::Embedding& table,
                                    const PositionTables& tables, int64_t offset, double sinusoid_scale,
                                    const torch::Tensor& positions = torch::Tensor());

// Additive attention score bias for position "alibi" (-slope_h * |query - key|, the slopes from the model's
// PositionTables) or "relative" (a learned T5 bucket table, causal or bidirectional buckets).
class AttentionBiasImpl : public torch::nn::Module {
 public:
  AttentionBiasImpl(const ModelConfig& config, bool bidirectional, const PositionTables& tables);
  // (1, nh, T, S) for queries at positions offset .. offset + T - 1 and keys 0 .. S - 1.
  torch::Tensor forward(int64_t query_length, int64_t key_length, int64_t offset, const torch::Device& device);

  RelativePositionBias rel_bias{nullptr};  // relative only

 private:
  torch::Tensor slopes_;  // alibi only: (nh,) float, the PositionTables' buffer (on the model's device)
};
TORCH_MODULE(AttentionBias);


}  // namespace lmzoo
