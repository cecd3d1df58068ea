// TrainConfig validation.
#include "train/train_config.h"

#include <stdexcept>

namespace lmzoo {

namespace {
void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("training config: " + message);
}
}  // namespace

void TrainConfig::validate() const {
  require(objective == "causal" || objective == "mlm" || objective == "classify" || objective == "span" ||
              objective == "prefix" || objective == "seq2seq",
          "objective '" + objective + "' is not available (this lmzoo trains: causal, mlm, classify, span, prefix, "
          "seq2seq)");
  require(batch_size > 0, "batch_size must be positive");
  require(grad_accum > 0, "grad_accum must be positive");
  require(steps > 0, "steps must be positive");
  require(lr > 0, "lr must be positive");
  require(min_lr >= 0 && min_lr <= lr, "min_lr must be in [0, lr]");
  require(warmup >= 0, "warmup must be >= 0");
  require(decay_steps >= 0, "decay_steps must be >= 0");
  require(schedule == "cosine" || schedule == "linear" || schedule == "constant",
          "schedule '" + schedule + "' is not cosine|linear|constant");
  require(weight_decay >= 0, "weight_decay must be >= 0");
  require(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, "beta1 and beta2 must be in [0, 1)");
  require(grad_clip >= 0, "grad_clip must be >= 0");
  require(eval_interval > 0, "eval_interval must be positive");
  require(eval_iters > 0, "eval_iters must be positive");
  require(log_interval > 0, "log_interval must be positive");
  require(max_consecutive_skips > 0, "max_consecutive_skips must be positive");
  require(precision == "fp32" || precision == "bf16" || precision == "fp16",
          "precision '" + precision + "' is not fp32|bf16|fp16");
  auto in01 = [](double p) { return p >= 0.0 && p <= 1.0; };
  require(in01(mlm_probability) && mlm_probability > 0, "mlm_probability must be in (0, 1]");
  require(in01(mask_rate) && in01(random_rate) && mask_rate + random_rate <= 1.0,
          "mask_rate and random_rate must be in [0, 1] with mask_rate + random_rate <= 1");
  require(noise_density > 0 && noise_density < 1, "noise_density must be in (0, 1)");
  require(mean_span_length >= 1, "mean_span_length must be >= 1");
}

}  // namespace lmzoo
