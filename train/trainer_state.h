// TrainerState: where a run stands (step, best validation loss, counters, fp16 loss scale), as trainer_state.json.
#pragma once
#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

namespace lmzoo {

// The most optimizer steps a run may count (about 30 years at one step per millisecond): the bound every step read
// from trainer_state.json (and --steps) is checked against.
inline constexpr int64_t kMaxTrainerCount = int64_t(1) << 40;

// Everything the trainer needs, beside weights, optimizer and RNG, to continue exactly where it stopped.
struct TrainerState {
  int64_t step = 0;  // optimizer steps completed (skipped ones included: the schedule and data moved on)
  double best_val_loss = std::numeric_limits<double>::infinity();
  int64_t tokens_seen = 0;
  double elapsed_s = 0.0;
  int64_t skipped_steps = 0;        // steps whose gradients were not finite (no update made)
  double loss_scale = 0.0;          // fp16: the dynamic loss scale (0: none yet)
  int64_t scale_growth_tracker = 0;  // fp16: finite steps in a row since the scale last changed
};
void to_json(nlohmann::json& j, const TrainerState& s);
// Throws a one-line std::runtime_error naming the field when one is of the wrong type or out of its range
// (a negative or fractional step, skipped steps past the step, a non-finite loss).
void from_json(const nlohmann::json& j, TrainerState& s);

}  // namespace lmzoo
