// Learning-rate schedules: linear warmup, then cosine, linear or constant decay to min_lr.
#pragma once
#include <cstdint>

#include "train/train_config.h"

namespace lmzoo {

// Learning rate for optimizer step `step` (0-based) of config.steps.
double learning_rate(const TrainConfig& config, int64_t step);

}  // namespace lmzoo
