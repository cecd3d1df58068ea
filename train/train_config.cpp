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
  require(batch_size > 0, "batch_size must be positive");
  require(grad_accum > 0, "grad_accum must be positive");
  require(steps > 0, "steps must be positive");
  require(lr > 0, "lr must be positive");
  require(min_lr >= 0 && min_lr <= lr, "min_lr must be in [0, lr]");
  require(warmup >= 0, "warmup must be >= 0");
  require(decay_steps >= 0, "decay_steps must be >= 0");
  require(weight_decay >= 0, "weight_decay must be >= 0");
  require(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, "beta1 and beta2 must be in [0, 1)");
  require(grad_clip >= 0, "grad_clip must be >= 0");
  require(eval_interval > 0, "eval_interval must be positive");
  require(eval_iters > 0, "eval_iters must be positive");
  require(log_interval > 0, "log_interval must be positive");
  require(max_consecutive_skips > 0, "max_consecutive_skips must be positive");
  auto in01 = [](double p) { return p >= 0.0 && p <= 1.0; };
  require(in01(mlm_probability) && mlm_probability > 0, "mlm_probability must be in (0, 1]");
  require(in01(mask_rate) && in01(random_rate) && mask_rate + random_rate <= 1.0,
          "mask_rate and random_rate must be in [0, 1] with mask_rate + random_rate <= 1");
  require(noise_density > 0 && noise_density < 1, "noise_density must be in (0, 1)");
  require(mean_span_length >= 1, "mean_span_length must be >= 1");
}

Objective default_objective(Arch arch, bool pairs_data) {
  switch (arch) {
    case Arch::kGpt: return Objective::kCausal;
    case Arch::kBert: return Objective::kMlm;
    case Arch::kT5: return pairs_data ? Objective::kSeq2seq : Objective::kSpan;
  }
  throw std::logic_error("arch outside its table");
}

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
