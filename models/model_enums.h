// The closed sets of a model's config: architecture, position scheme, norm, norm position, activation and
// initialisation, each with its one name table. Leaves out: training's sets (train/train_enums.h).
#pragma once
#include "base/enum_table.h"

namespace lmzoo {

enum class Arch { kGpt, kBert, kT5 };
enum class Position { kLearned, kSinusoidal, kRope, kAlibi, kRelative, kNone };
enum class NormKind { kLayerNorm, kRmsNorm };
enum class NormPosition { kPre, kPost };
enum class Activation { kRelu, kGelu, kGeluTanh, kSilu, kGeglu, kSwiglu };
enum class InitScheme { kGpt2, kBert, kT5 };

template <>
struct EnumTable<Arch> {
  static constexpr const char* what = "arch";
  static constexpr EnumEntry<Arch> entries[] = {
      {Arch::kGpt, "gpt", "decoder-only"},
      {Arch::kBert, "bert", "encoder-only"},
      {Arch::kT5, "t5", "encoder-decoder"},
  };
};

template <>
struct EnumTable<Position> {
  static constexpr const char* what = "position";
  static constexpr EnumEntry<Position> entries[] = {
      {Position::kLearned, "learned", "a learned table"},
      {Position::kSinusoidal, "sinusoidal", "fixed sin/cos table"},
      {Position::kRope, "rope", "rotary"},
      {Position::kAlibi, "alibi", "linear score bias"},
      {Position::kRelative, "relative", "T5's bucketed score bias"},
      {Position::kNone, "none", "no positions"},
  };
};

template <>
struct EnumTable<NormKind> {
  static constexpr const char* what = "norm";
  static constexpr EnumEntry<NormKind> entries[] = {
      {NormKind::kLayerNorm, "layernorm", "mean and variance"},
      {NormKind::kRmsNorm, "rmsnorm", "root mean square, no mean"},
  };
};

template <>
struct EnumTable<NormPosition> {
  static constexpr const char* what = "norm_position";
  static constexpr EnumEntry<NormPosition> entries[] = {
      {NormPosition::kPre, "pre", "before each sublayer"},
      {NormPosition::kPost, "post", "after each residual"},
  };
};

template <>
struct EnumTable<Activation> {
  static constexpr const char* what = "activation";
  static constexpr EnumEntry<Activation> entries[] = {
      {Activation::kRelu, "relu", "max(x, 0)"},
      {Activation::kGelu, "gelu", "exact, erf"},
      {Activation::kGeluTanh, "gelu-tanh", "tanh approximation"},
      {Activation::kSilu, "silu", "x sigmoid(x)"},
      {Activation::kGeglu, "geglu", "gelu-tanh gated"},
      {Activation::kSwiglu, "swiglu", "silu gated"},
  };
};

template <>
struct EnumTable<InitScheme> {
  static constexpr const char* what = "init";
  static constexpr EnumEntry<InitScheme> entries[] = {
      {InitScheme::kGpt2, "gpt2", "N(0, 0.02), scaled residual projections"},
      {InitScheme::kBert, "bert", "N(0, 0.02) everywhere"},
      {InitScheme::kT5, "t5", "fan-in scaled, T5's"},
  };
};

LMZOO_ENUM_JSON(Arch)
LMZOO_ENUM_JSON(Position)
LMZOO_ENUM_JSON(NormKind)
LMZOO_ENUM_JSON(NormPosition)
LMZOO_ENUM_JSON(Activation)
LMZOO_ENUM_JSON(InitScheme)

// Gated feed-forwards (act(c_fc x) * c_fc_lin x) and the activation applied to their gate.
inline bool is_gated(Activation a) { return a == Activation::kGeglu || a == Activation::kSwiglu; }

}  // namespace lmzoo
