// What a training run reports to the program that runs it after each step and each validation; either report
// may stop the run. Leaves out progress lines and metrics.jsonl (the trainer writes those itself).
#pragma once
#include <cstdint>
#include <functional>

namespace lmzoo {

// A callback's answer: go on, or stop the run (last/ is saved as on an interrupt, and train_model returns with
// interrupted and stopped_by_callback set).
enum class RunControl { kContinue, kStop };

// After an optimizer step: the step reached, its global mean train loss (the value metrics.jsonl logs for it),
// its learning rate and its tokens per second (all ranks).
struct StepReport {
  int64_t step = 0;
  double train_loss = 0.0;
  double lr = 0.0;
  double tokens_per_s = 0.0;
};

// After a validation: the step, the validation loss, and whether it is the best so far (saved as best/).
struct ValidationReport {
  int64_t step = 0;
  double val_loss = 0.0;
  bool best = false;
};

// All optional. With ranks, every rank calls them with the same values and the run stops when any rank asks.
// on_step reads the loss from the device every step (on CUDA a wait for the GPU at every step).
struct TrainCallbacks {
  std::function<RunControl(const StepReport&)> on_step;
  std::function<RunControl(const ValidationReport&)> on_eval;
  // Right after each optimizer step is queued, before anything of it is read back (no wait for a GPU): the step
  // reached. Where a profiler starts and stops.
  std::function<void(int64_t step)> after_step;
};

}  // namespace lmzoo
