// SkipMonitor: device-side counters of skipped steps, read in one transfer when the trainer syncs anyway.
#include "train/skip_monitor.h"

namespace lmzoo {

SkipMonitor::SkipMonitor(const torch::Device& device) {
  const auto options = torch::TensorOptions().dtype(torch::kFloat).device(device);
  window_ = torch::zeros({}, options);
  consecutive_ = torch::zeros({}, options);
  longest_ = torch::zeros({}, options);
  uncounted_ = torch::zeros({}, options);
}

void SkipMonitor::record(const AdamWStepResult& step) {
  torch::NoGradGuard no_grad;
  const torch::Tensor skipped = step.skipped.to(window_.device()).to(torch::kFloat);
  window_.add_(skipped);
  consecutive_.add_(1).mul_(skipped);  // + 1 on a skip, back to 0 on an update
  longest_.copy_(torch::maximum(longest_, consecutive_));
  if (step.counted_when_skipped) uncounted_.add_(skipped);
}

SkipMonitor::Settled SkipMonitor::settle(torch::optim::AdamW& optimizer) {
  torch::NoGradGuard no_grad;
  const torch::Tensor values = torch::stack({window_, longest_, uncounted_}).to(torch::kCPU);  // [3]
  const auto* v = values.data_ptr<float>();
  take_back_skipped_steps(optimizer, int64_t(v[2]));
  window_.zero_();
  uncounted_.zero_();
  longest_.copy_(consecutive_);  // a run of skips carries on into the next window
  return {int64_t(v[0]), int64_t(v[1])};
}

}  // namespace lmzoo
