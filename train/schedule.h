// Learning-rate schedules: linear warmup, then cosine, linear or constant decay to min_lr.
#pragma once
#include <cstdint>

#include "train/train_config.h"

namespace lmzoo {

// Learning rate for optimizer step `step` (0-based): warmup, decay until config.decay_steps (0: config.steps),
// then min_lr.
double learning_rate(const TrainConfig& config, int64_t step);

}  // namespace lmzoo
