// Training configuration: objective, data, optimiser, schedule, evaluation and device settings (its fields declared
// once, in train_fields.h).
#pragma once
#include <cstdint>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "models/model_enums.h"
#include "train/train_enums.h"
#include "train/train_fields.h"

namespace lmzoo {

// The largest value of each count and rate: past these a value is a typo rather than a run this trainer can
// finish, and step counts stay far inside int64.
namespace train_limits {
constexpr int64_t kMaxBatch = 1048576;          // batch_size, grad_accum, eval_iters
constexpr int64_t kMaxSteps = 1000000000000;    // steps, warmup, decay_steps, intervals: 10^12
constexpr double kMaxRate = 10.0;               // lr, weight_decay
constexpr double kMaxGradClip = 1e6;
constexpr int64_t kMaxLoraRank = 65536;
constexpr double kMaxLoraAlpha = 1048576;       // lora_alpha: kMaxLoraRank * 16
}  // namespace train_limits

struct TrainConfig {
#define LMZOO_DECLARE_TRAIN_FIELD(type, name, default_value, flag, flag_kind, group, resumable, help) \
  type name = default_value;
  LMZOO_TRAIN_CONFIG_FIELDS(LMZOO_DECLARE_TRAIN_FIELD)
#undef LMZOO_DECLARE_TRAIN_FIELD

  // Throws std::invalid_argument naming the first bad field (each within its range: train_limits).
  void validate() const;
};

// The objective a family trains with when none is named: causal (gpt), mlm (bert), span (t5; seq2seq on prepared
// pairs).
Objective default_objective(Arch arch, bool pairs_data);

// Fine-tuning a classifier starts from HF Trainer's defaults instead: lr 5e-5 decaying linearly to 0, no warmup,
// weight decay 0.01, beta2 0.999; the other fields are TrainConfig's.
TrainConfig classifier_defaults();

// T with classifier_defaults() in every field it sets (lr, min_lr, schedule, warmup, weight_decay, beta2) that is not
// named in GIVEN (TrainConfig field names): the settings of a classifier fine-tune that the user did not choose.
TrainConfig with_classifier_defaults(const TrainConfig& t, const std::set<std::string>& given);

// lmzoo bench's run: nanoGPT's CPU baby run (lr 1e-3 cosine to 1e-4 over STEPS, warmup 100, betas (0.9, 0.99),
// weight decay 0.1, clip 1.0), one evaluation at the end.
TrainConfig bench_defaults(int64_t steps);

// Every field by its name; a missing field takes its default (train_config_from_json refuses unknown ones).
void to_json(nlohmann::json& j, const TrainConfig& config);
void from_json(const nlohmann::json& j, TrainConfig& config);

// Parses a stored training config, refusing unknown keys and values of the wrong JSON type (validate() checks
// the ranges).
TrainConfig train_config_from_json(const nlohmann::json& j);

}  // namespace lmzoo
