// Dynamic loss scaling for fp16 training (the grow/backoff scheme of torch.amp.GradScaler).
#pragma once
#include <cstdint>

#include <torch/torch.h>

namespace lmzoo {

// The loss is multiplied by scale() before backward so that small fp16 gradients do not flush to zero;
// the optimizer divides the gradients by it again. A step whose gradients overflow (not finite) is
// skipped and halves the scale; growth_interval finite steps in a row double it. Everything stays on the
// device: update() never waits for it.
class LossScaler {
 public:
  static constexpr double kInitialScale = 65536.0;  // 2^16, GradScaler's default
  static constexpr double kGrowthFactor = 2.0;
  static constexpr double kBackoffFactor = 0.5;
  static constexpr int64_t kGrowthInterval = 2000;

  LossScaler() = default;  // disabled: scale() is undefined
  LossScaler(const torch::Device& device, double scale = kInitialScale, int64_t growth_tracker = 0,
             int64_t growth_interval = kGrowthInterval);

  bool enabled() const { return scale_.defined(); }
  const torch::Tensor& scale() const { return scale_; }  // 0-dim float32 on the device
  // After a step: skipped is the optimizer's 0-dim flag (1: the gradients were not finite).
  void update(const torch::Tensor& skipped);

  // For checkpoints (reading waits for the device).
  double scale_value() const;
  int64_t growth_tracker() const;

 private:
  torch::Tensor scale_, growth_tracker_;  // finite steps in a row since the scale last changed
  int64_t growth_interval_ = kGrowthInterval;
};

}  // namespace lmzoo
