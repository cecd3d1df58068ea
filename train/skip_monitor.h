// Counts optimizer steps skipped for non-finite gradients without waiting for the device, and settles the
// count (and the Adam step counters) at the trainer's sync points.
#pragma once
#include <cstdint>

#include <torch/torch.h>

#include "models/kernels/fused_adamw.h"

namespace lmzoo {

class SkipMonitor {
 public:
  explicit SkipMonitor(const torch::Device& device);

  // After every optimizer step (device-side adds only).
  void record(const AdamWStepResult& step);
  // Skipped steps the Adam step counters still include: pass to clip_and_adamw_step.
  const torch::Tensor& uncounted() const { return uncounted_; }

  struct Settled {
    int64_t skipped = 0;      // skipped since the last settle
    int64_t longest_run = 0;  // the longest run of consecutive skips seen since the last settle
  };
  // At a sync point: one read from the device; gives the uncounted steps back to the optimizer.
  Settled settle(torch::optim::AdamW& optimizer);

 private:
  // 0-dim float tensors on the device.
  torch::Tensor window_, consecutive_, longest_, uncounted_;
};

}  // namespace lmzoo
