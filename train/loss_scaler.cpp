// LossScaler: grow/backoff of the fp16 loss scale with device-side tensor ops (no host sync).
#include "train/loss_scaler.h"

namespace lmzoo {

LossScaler::LossScaler(const torch::Device& device, double scale, int64_t growth_tracker, int64_t growth_interval)
    : scale_(torch::full({}, scale, torch::TensorOptions().dtype(torch::kFloat).device(device))),
      growth_tracker_(torch::full({}, double(growth_tracker), torch::TensorOptions().dtype(torch::kFloat).device(device))),
      growth_interval_(growth_interval) {}

void LossScaler::update(const torch::Tensor& skipped) {
  if (!enabled()) return;
  torch::NoGradGuard no_grad;
  const torch::Tensor overflow = skipped.to(scale_.device()).to(torch::kFloat) > 0;
  const torch::Tensor tracker = torch::where(overflow, torch::zeros_like(growth_tracker_), growth_tracker_ + 1);
  const torch::Tensor grow = tracker >= double(growth_interval_);
  scale_.copy_(torch::where(overflow, scale_ * kBackoffFactor, torch::where(grow, scale_ * kGrowthFactor, scale_)));
  growth_tracker_.copy_(torch::where(grow, torch::zeros_like(tracker), tracker));
}

double LossScaler::scale_value() const { return enabled() ? scale_.item<double>() : 1.0; }

int64_t LossScaler::growth_tracker() const { return enabled() ? int64_t(growth_tracker_.item<double>()) : 0; }

}  // namespace lmzoo
