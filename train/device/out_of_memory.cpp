// Out-of-memory errors of a training run as one line: the estimate (train/device/training_memory.h), the device's memory
// and the switches this run has not used yet.
#include "train/device/out_of_memory.h"

#include <vector>

#include "models/memory_estimate.h"
#include "train/device/device_peak.h"
#include "train/device/training_memory.h"

namespace lmzoo {

bool is_out_of_memory(const c10::Error& error) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&error) != nullptr) return true;
  return error.msg().find("can't allocate memory") != std::string::npos;  // LibTorch 1.13's CPU allocator
}

std::string out_of_memory_message(const ModelConfig& model, const TrainConfig& cfg, const torch::Device& device) {
  std::string message = "out of memory on " + device.str();
  try {
    const MemoryEstimate estimate = estimate_training_run(model, cfg, device);
    message += ": this run needs about " + format_bytes(estimate.total()) + " by its estimate (train --dry-run "
               "shows the parts), the device has " + format_bytes(device_memory_capacity_bytes(device));
  } catch (const std::exception&) {  // an estimate is a courtesy here: the error itself must still be reported
  }
  std::vector<std::string> levers;
  if (cfg.activation_checkpointing == "none") levers.push_back("--activation-checkpointing blocks");
  if (!cfg.fused_loss && cfg.objective != Objective::kClassify) levers.push_back("--fused-loss (no logits tensor)");
  levers.push_back("a smaller --batch-size (--grad-accum keeps the batch per step)");
  if (cfg.lora_rank == 0) levers.push_back("LoRA (--lora-rank 8 on a frozen base)");
  message += "; lower it with ";
  for (size_t i = 0; i < levers.size(); ++i) message += (i == 0 ? "" : i + 1 == levers.size() ? " or " : ", ") + levers[i];
  return message + "; the last checkpoint saved is intact";
}

}  // namespace lmzoo
