// Tiny training runs for the tests: a run on random token ids that writes and shows nothing, and the loss of
// every one of its steps.
#pragma once
#include <vector>

#include "train/trainer.h"

namespace lmzoo::test {

// MODEL trained for STEPS steps of BATCH_SIZE rows of seeded random token ids on DEVICE, bench's optimizer
// settings, no outputs, no progress.
inline TrainRequest random_token_run(const ModelConfig& model, int64_t steps, int64_t batch_size,
                                     const torch::Device& device) {
  TrainRequest request;
  request.model = model;
  request.train = bench_defaults(steps);
  request.train.batch_size = batch_size;
  request.train.device = device.str();
  request.random_tokens = true;
  request.write_outputs = false;
  request.show_progress = false;
  return request;
}

// Trains REQUEST on DEVICE and returns each step's train loss (read every step); the run's result in *result.
inline std::vector<double> losses_per_step(TrainRequest request, const torch::Device& device,
                                           TrainResult* result = nullptr) {
  std::vector<double> losses;
  request.callbacks.on_step = [&](const StepReport& r) {
    losses.push_back(r.train_loss);
    return RunControl::kContinue;
  };
  const TrainResult done = train_model(request, device);
  if (result != nullptr) *result = done;
  return losses;
}

}  // namespace lmzoo::test
