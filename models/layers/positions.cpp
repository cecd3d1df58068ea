// Sinusoidal, rotary and ALiBi position schemes, and the per-model attention score bias.
// Shapes: B batch, T query positions, S key positions, nh heads, hs head size.
#include "models/layers/positions.h"

#include <cmath>

namespace lmzoo {

namespace {
// base^(-2i / dim) for i < dim / 2, computed in double (the exports embed the same values).
std::vector<double> inverse_powers(int64_t dim, double base) {
  std::vector<double> frequencies;
  for (int64_t i = 0; i < dim; i += 2) frequencies.push_back(std::pow(base, -double(i) / double(dim)));
  return frequencies;
}
torch::Tensor as_tensor(const std::vector<double>& values) {
  return torch::tensor(values, torch::TensorOptions().dtype(torch::kDouble));
}
}  // namespace

std::vector<double> sinusoidal_frequencies(int64_t dim) { return inverse_powers(dim, 10000.0); }

std::vector<double> rotary_frequencies(int64_t rotary_dims, double base) { return inverse_powers(rotary_dims, base); }

int64_t rotary_dims(const ModelConfig& config) {
  return int64_t(std::llround(config.rope_fraction * double(config.head_size())));
}

torch::Tensor sinusoidal_table(int64_t length, int64_t dim) {
  auto f64 = torch::TensorOptions().dtype(torch::kDouble);
  auto position = torch::arange(length, f64).unsqueeze(1);        // (L, 1)
  auto angle = position * as_tensor(sinusoidal_frequencies(dim));  // (L, dim/2)
  return torch::stack({torch::sin(angle), torch::cos(angle)}, -1).reshape({length, dim}).to(torch::kFloat);
}

// Rows of TABLE (L, W) for the tokens of x (B, T, ...): rows offset .. offset + T - 1, (T, W), or with POSITIONS
// (B, T) the row of each token, (B, T, W).
torch::Tensor table_rows(const torch::Tensor& table, const torch::Tensor& x, int64_t offset,
                         const torch::Tensor& positions) {
  const int64_t T = x.size(1);
  if (!positions.defined()) return table.slice(0, offset, offset + T);  // (T, W)
  TORCH_CHECK(positions.dim() == 2 && positions.size(1) == T, "positions must be (B, T)");
  TORCH_CHECK(positions.numel() == 0 || positions.max().item<int64_t>() < table.size(0), "position ",
              positions.numel() ? positions.max().item<int64_t>() : 0, " exceeds the context length ", table.size(0));
  const auto flat = positions.reshape({-1}).to(table.device());
  return table.index_select(0, flat).view({positions.size(0), T, table.size(1)});  // (B, T, W)
}

torch::Tensor add_sinusoidal(const torch::Tensor& x, const torch::Tensor& table, int64_t offset,
                             double embedding_scale, const torch::Tensor& positions) {
  auto rows = table_rows(table, x, offset, positions).to(x.device(), x.scalar_type());  // (T, C) or (B, T, C)
  return (embedding_scale == 1.0 ? x : x * embedding_scale) + rows;
}

RotaryTables rotary_tables(int64_t length, int64_t rotary_dims, double base) {
  auto f64 = torch::TensorOptions().dtype(torch::kDouble);
  auto angle = torch::arange(length, f64).unsqueeze(1) * as_tensor(rotary_frequencies(rotary_dims, base));  // (L, rd/2)
  angle = torch::cat({angle, angle}, -1);                                                          // (L, rd)
  return {torch::cos(angle).to(torch::kFloat), torch::sin(angle).to(torch::kFloat)};
}

torch::Tensor apply_rotary(const torch::Tensor& x, const RotaryTables& tables, int64_t offset,
                           const torch::Tensor& positions) {
  const int64_t T = x.size(1), rd = tables.cos.size(1), half = rd / 2;
  TORCH_CHECK(positions.defined() || offset + T <= tables.cos.size(0), "rotary position ", offset + T,
              " exceeds the context length ", tables.cos.size(0));
  TORCH_CHECK(rd <= x.size(3), "rotary tables of ", rd, " dimensions for heads of ", x.size(3));
  // (T, 1, rd), or (B, T, 1, rd) with per-token positions
  auto cos = table_rows(tables.cos, x, offset, positions).unsqueeze(-2).to(x.device(), x.scalar_type());
  auto sin = table_rows(tables.sin, x, offset, positions).unsqueeze(-2).to(x.device(), x.scalar_type());
  auto part = rd == x.size(3) ? x : x.slice(3, 0, rd);                             // (B, T, nh, rd)
  auto rotated = torch::cat({-part.slice(3, half), part.slice(3, 0, half)}, 3);  // (B, T, nh, rd)
  auto out = part * cos + rotated * sin;
  if (rd == x.size(3)) return out;
  return torch::cat({out, x.slice(3, rd)}, 3);  // (B, T, nh, hs): the last hs - rd dims pass through
}

std::vector<double> alibi_slopes(int64_t n_head) {
  auto power_of_two_slopes = [](int64_t n) {
    std::vector<double> slopes;
    const double start = std::pow(2.0, -8.0 / double(n));
    for (int64_t i = 1; i <= n; ++i) slopes.push_back(std::pow(start, double(i)));
    return slopes;
  };
  int64_t p = 1;
  while (p * 2 <= n_head) p *= 2;
  std::vector<double> slopes = power_of_two_slopes(p);
  const std::vector<double> extra = power_of_two_slopes(2 * p);
  for (int64_t i = 0; int64_t(slopes.size()) < n_head; i += 2) slopes.push_back(extra[i]);
  return slopes;
}

PositionScheme position_scheme(Position position) {
  PositionScheme s;
  switch (position) {
    case Position::kLearned:
      s.learned_table = s.bounded_by_table = true;
      return s;
    case Position::kSinusoidal:
    case Position::kRope:
      s.fixed_tables = s.bounded_by_table = true;
      return s;
    case Position::kAlibi:
      s.fixed_tables = s.score_bias = true;
      return s;
    case Position::kRelative:
      s.score_bias = true;
      return s;
    case Position::kNone:
      return s;
  }
  throw std::logic_error("position outside its table");
}

torch::Tensor add_position_encoding(Position position, const torch::Tensor& x, const torch::nn::Embedding& table,
                                    const PositionTables& tables, int64_t offset, double sinusoid_scale,
                                    const torch::Tensor& positions) {
  switch (position) {
    case Position::kLearned: return x + table_rows(table->weight, x, offset, positions);  // (T, C) or (B, T, C)
    case Position::kSinusoidal: return add_sinusoidal(x, tables->sinusoid, offset, sinusoid_scale, positions);
    case Position::kRope:
    case Position::kAlibi:
    case Position::kRelative:
    case Position::kNone: return x;
  }
  throw std::logic_error("position outside its table");
}

PositionTablesImpl::PositionTablesImpl(const ModelConfig& config) {
  switch (config.position) {
    case Position::kSinusoidal:
      sinusoid = register_buffer("sinusoid", sinusoidal_table(config.max_seq_len, config.d_model));
      break;
    case Position::kRope: {
      const RotaryTables tables = rotary_tables(config.max_seq_len, rotary_dims(config), config.rope_base);
      rotary.cos = register_buffer("rope_cos", tables.cos);
      rotary.sin = register_buffer("rope_sin", tables.sin);
      break;
    }
    case Position::kAlibi:
      alibi_slopes = register_buffer(
          "alibi_slopes", torch::tensor(lmzoo::alibi_slopes(config.n_head), torch::kDouble).to(torch::kFloat));  // (nh,)
      break;
    case Position::kLearned:
    case Position::kRelative:
    case Position::kNone: break;  // no fixed table
  }
}

AttentionBiasImpl::AttentionBiasImpl(const ModelConfig& config, bool bidirectional, const PositionTables& tables) {
  switch (config.position) {
    case Position::kRelative:
      rel_bias = register_module("rel_bias", RelativePositionBias(config.n_head, config.relative_buckets,
                                                                  config.relative_max_distance, bidirectional));
      return;
    case Position::kAlibi:
      TORCH_CHECK(tables && tables->alibi_slopes.defined(), "alibi needs the model's position tables");
      slopes_ = tables->alibi_slopes;  // shares the buffer: it moves with the model
      return;
    case Position::kLearned:
    case Position::kSinusoidal:
    case Position::kRope:
    case Position::kNone: break;
  }
  TORCH_CHECK(false, "AttentionBias is for position alibi or relative, not ", enum_name(config.position));
}

torch::Tensor AttentionBiasImpl::forward(int64_t query_length, int64_t key_length, int64_t offset,
                                         const torch::Device& device) {
  if (rel_bias) return rel_bias(query_length, key_length, offset);  // (1, nh, T, S)
  auto options = torch::TensorOptions().dtype(torch::kFloat).device(device);
  auto query = torch::arange(offset, offset + query_length, options).view({-1, 1});  // (T, 1)
  auto key = torch::arange(key_length, options).view({1, -1});                      // (1, S)
  auto distance = (query - key).abs();                                              // (T, S)
  return -slopes_.to(device).view({1, -1, 1, 1}) * distance.unsqueeze(0);           // (1, nh, T, S)
}

}  // namespace lmzoo
