// The closed sets of a training run: objective, precision and learning-rate schedule, each with its one name
// table. Leaves out: the model's sets (models/model_enums.h).
#pragma once
#include "base/enum_table.h"

namespace lmzoo {

enum class Objective { kCausal, kMlm, kClassify, kSpan, kPrefix, kSeq2seq, kChat };
enum class Precision { kFp32, kBf16, kFp16 };
enum class Schedule { kCosine, kLinear, kConstant };
// What happens to a chat example longer than a row.
enum class Truncation { kRefuse, kLeft, kRight };
// Storage of a LoRA run's frozen projection weights (computation stays in the training precision).
enum class BasePrecision { kFp32, kBf16, kInt8 };
// Which attention kernel a CUDA run's scaled_dot_product_attention tries first (train/device/attention_kernels.h).
enum class AttentionKernel { kDefault, kFastest, kFlash, kEfficient, kCudnn, kMath };

template <>
struct EnumTable<Objective> {
  static constexpr const char* what = "objective";
  static constexpr EnumEntry<Objective> entries[] = {
      {Objective::kCausal, "causal", "next token, gpt"},
      {Objective::kMlm, "mlm", "masked LM, bert"},
      {Objective::kClassify, "classify", "labelled text, a bert classifier"},
      {Objective::kSpan, "span", "span corruption, t5"},
      {Objective::kPrefix, "prefix", "prefix LM, gpt or t5"},
      {Objective::kSeq2seq, "seq2seq", "prepared pairs, t5"},
      {Objective::kChat, "chat", "the answers of prepared conversations, gpt"},
  };
};

template <>
struct EnumTable<Precision> {
  static constexpr const char* what = "precision";
  static constexpr EnumEntry<Precision> entries[] = {
      {Precision::kFp32, "fp32", "float32"},
      {Precision::kBf16, "bf16", "bfloat16 autocast"},
      {Precision::kFp16, "fp16", "float16 autocast with loss scaling, CUDA"},
  };
};

template <>
struct EnumTable<Schedule> {
  static constexpr const char* what = "schedule";
  static constexpr EnumEntry<Schedule> entries[] = {
      {Schedule::kCosine, "cosine", "cosine decay to min-lr"},
      {Schedule::kLinear, "linear", "linear decay to min-lr"},
      {Schedule::kConstant, "constant", "lr after warmup"},
  };
};

template <>
struct EnumTable<Truncation> {
  static constexpr const char* what = "truncation";
  static constexpr EnumEntry<Truncation> entries[] = {
      {Truncation::kRefuse, "refuse", "stop, naming how many examples are too long"},
      {Truncation::kLeft, "left", "drop the start, keeping the last answers"},
      {Truncation::kRight, "right", "drop the end"},
  };
};

template <>
struct EnumTable<BasePrecision> {
  static constexpr const char* what = "base precision";
  static constexpr EnumEntry<BasePrecision> entries[] = {
      {BasePrecision::kFp32, "fp32", "as trained"},
      {BasePrecision::kBf16, "bf16", "half the memory"},
      {BasePrecision::kInt8, "int8", "a quarter: weight-only, symmetric per output row"},
  };
};

template <>
struct EnumTable<AttentionKernel> {
  static constexpr const char* what = "attention kernel";
  static constexpr EnumEntry<AttentionKernel> entries[] = {
      {AttentionKernel::kDefault, "default", "LibTorch's own order"},
      {AttentionKernel::kFastest, "fastest", "each timed at the run's shape at the start, the fastest first"},
      {AttentionKernel::kFlash, "flash", "FlashAttention"},
      {AttentionKernel::kEfficient, "efficient", "memory-efficient attention"},
      {AttentionKernel::kCudnn, "cudnn", "cuDNN's fused attention"},
      {AttentionKernel::kMath, "math", "plain matrix products, no fused kernel"},
  };
};

LMZOO_ENUM_JSON(Objective)
LMZOO_ENUM_JSON(Precision)
LMZOO_ENUM_JSON(Schedule)
LMZOO_ENUM_JSON(BasePrecision)
LMZOO_ENUM_JSON(Truncation)
LMZOO_ENUM_JSON(AttentionKernel)

}  // namespace lmzoo
