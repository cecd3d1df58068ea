// TrainConfig validation.
#include "train/train_config.h"

#include <sstream>
#include <stdexcept>
#include <vector>

#include "models/activation_checkpointing.h"
#include "models/config.h"
#include "models/json_fields.h"
#include "models/lora.h"

namespace lmzoo {

namespace {
void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("training config: " + message);
}
}  // namespace

void TrainConfig::validate() const {
  namespace lim = train_limits;
  auto between = [](auto value, decltype(value) lo, decltype(value) hi, const char* name) {
    require_between(value, lo, hi, "training config", name);
  };
  between(batch_size, int64_t(1), lim::kMaxBatch, "batch_size");
  between(grad_accum, int64_t(1), lim::kMaxBatch, "grad_accum");
  between(steps, int64_t(1), lim::kMaxSteps, "steps");
  require(lr > 0 && lr <= lim::kMaxRate, "lr must be in (0, 10], got " + std::to_string(lr));
  require(min_lr >= 0 && min_lr <= lr, "min_lr must be in [0, lr]");
  between(warmup, int64_t(0), lim::kMaxSteps, "warmup");
  between(decay_steps, int64_t(0), lim::kMaxSteps, "decay_steps");
  between(weight_decay, 0.0, lim::kMaxRate, "weight_decay");
  require(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, "beta1 and beta2 must be in [0, 1)");
  between(grad_clip, 0.0, lim::kMaxGradClip, "grad_clip");
  between(eval_interval, int64_t(1), lim::kMaxSteps, "eval_interval");
  between(eval_iters, int64_t(1), lim::kMaxBatch, "eval_iters");
  between(log_interval, int64_t(1), lim::kMaxSteps, "log_interval");
  between(max_consecutive_skips, int64_t(1), lim::kMaxSteps, "max_consecutive_skips");
  auto in01 = [](double p) { return p >= 0.0 && p <= 1.0; };
  require(in01(mlm_probability) && mlm_probability > 0, "mlm_probability must be in (0, 1]");
  require(in01(mask_rate) && in01(random_rate) && mask_rate + random_rate <= 1.0,
          "mask_rate and random_rate must be in [0, 1] with mask_rate + random_rate <= 1");
  require(noise_density > 0 && noise_density < 1, "noise_density must be in (0, 1)");
  between(mean_span_length, 1.0, double(model_limits::kMaxSeqLen), "mean_span_length");
  between(max_length, int64_t(0), model_limits::kMaxSeqLen, "max_length");
  between(lora_rank, int64_t(0), lim::kMaxLoraRank, "lora_rank");
  if (lora_rank > 0) {
    std::ostringstream alpha;
    alpha << "lora_alpha must be in (0, " << int64_t(lim::kMaxLoraAlpha) << "], got " << lora_alpha;
    require(lora_alpha > 0 && lora_alpha <= lim::kMaxLoraAlpha, alpha.str());
    require(lora_dropout >= 0 && lora_dropout < 1, "lora_dropout must be in [0, 1)");
    parse_lora_targets(lora_targets);  // names the unknown part
  } else {
    require(base_precision == BasePrecision::kFp32,
            "--base-precision " + enum_name(base_precision) + " applies to a LoRA run's frozen weights (--lora-rank)");
    require(trainable.empty(), "--trainable applies to a LoRA run (--lora-rank): a full fine-tune trains everything");
  }
  parse_checkpoint_policy(activation_checkpointing);  // throws its own one-line std::invalid_argument
}

void to_json(nlohmann::json& j, const TrainConfig& config) {
  j = nlohmann::json::object();
#define LMZOO_TRAIN_FIELD_TO_JSON(type, name, default_value, flag, flag_kind, group, resumable, help) \
  j[#name] = config.name;
  LMZOO_TRAIN_CONFIG_FIELDS(LMZOO_TRAIN_FIELD_TO_JSON)
#undef LMZOO_TRAIN_FIELD_TO_JSON
}

void from_json(const nlohmann::json& j, TrainConfig& config) {
  const TrainConfig defaults;
#define LMZOO_TRAIN_FIELD_FROM_JSON(type, name, default_value, flag, flag_kind, group, resumable, help) \
  config.name = j.value(#name, defaults.name);
  LMZOO_TRAIN_CONFIG_FIELDS(LMZOO_TRAIN_FIELD_FROM_JSON)
#undef LMZOO_TRAIN_FIELD_FROM_JSON
}

TrainConfig train_config_from_json(const nlohmann::json& j) {
  require_json_fields(j, nlohmann::json(TrainConfig{}), "training config");
  try {
    return j.get<TrainConfig>();
  } catch (const std::invalid_argument& e) {  // an enum field's name outside its table
    throw std::invalid_argument("training config: " + std::string(e.what()));
  }
}

Objective default_objective(Arch arch, bool pairs_data) {
  switch (arch) {
    case Arch::kGpt: return Objective::kCausal;
    case Arch::kBert: return Objective::kMlm;
    case Arch::kT5: return pairs_data ? Objective::kSeq2seq : Objective::kSpan;
  }
  throw std::logic_error("arch outside its table");
}

namespace {

// The fields classifier_defaults() sets.
const std::vector<std::string> kClassifierDefaultFields = {"lr", "min_lr", "schedule", "warmup", "weight_decay",
                                                           "beta2"};

}  // namespace

TrainConfig classifier_defaults() {
  TrainConfig t;
  t.lr = 5e-5;
  t.min_lr = 0.0;
  t.schedule = Schedule::kLinear;
  t.warmup = 0;
  t.weight_decay = 0.01;
  t.beta2 = 0.999;
  return t;
}

TrainConfig with_classifier_defaults(const TrainConfig& t, const std::set<std::string>& given) {
  nlohmann::json merged = t;
  const nlohmann::json defaults = classifier_defaults();
  for (const auto& field : kClassifierDefaultFields) {
    if (!given.count(field)) merged[field] = defaults.at(field);
  }
  return train_config_from_json(merged);
}

TrainConfig bench_defaults(int64_t steps) {
  TrainConfig t;
  t.steps = steps;
  t.lr = 1e-3;
  t.min_lr = 1e-4;
  t.warmup = 100;
  t.beta1 = 0.9;
  t.beta2 = 0.99;
  t.weight_decay = 0.1;
  t.grad_clip = 1.0;
  t.eval_interval = steps;
  return t;
}

}  // namespace lmzoo
