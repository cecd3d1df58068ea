// Learning-rate schedules (nanoGPT's shape: warmup (step+1)/(warmup+1), then decay to min_lr at decay_steps, and min_lr after).
#include "train/schedule.h"

#include <algorithm>
#include <cmath>

namespace lmzoo {

double learning_rate(const TrainConfig& c, int64_t step) {
  if (step < c.warmup) return c.lr * double(step + 1) / double(c.warmup + 1);
  if (c.schedule == Schedule::kConstant) return c.lr;
  const int64_t horizon = c.decay_steps > 0 ? c.decay_steps : c.steps;
  const double span = std::max<int64_t>(1, horizon - c.warmup);
  const double progress = std::clamp(double(step - c.warmup) / span, 0.0, 1.0);
  const double coeff = c.schedule == Schedule::kCosine ? 0.5 * (1.0 + std::cos(M_PI * progress)) : 1.0 - progress;
  return c.min_lr + coeff * (c.lr - c.min_lr);
}

}  // namespace lmzoo
