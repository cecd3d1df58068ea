// LoRA merge: load base + adapters, fold, and save the result as a plain checkpoint.
#include "train/peft/lora_merge.h"

#include <filesystem>
#include <stdexcept>

#include "models/lora.h"
#include "train/peft/lora_setup.h"

namespace lmzoo {

AnyModel load_merged_model(const CheckpointInfo& checkpoint, const torch::Device& device, const std::string& base) {
  AnyModel model = load_model(checkpoint, device, base);
  if (is_lora_run(checkpoint.train)) merge_lora(*model.module());
  return model;
}

CheckpointInfo merged_checkpoint_info(const CheckpointInfo& checkpoint) {
  CheckpointInfo merged = checkpoint;
  const TrainConfig defaults;
  TrainConfig& t = merged.train;
  t.lora_rank = defaults.lora_rank;
  t.lora_alpha = defaults.lora_alpha;
  t.lora_dropout = defaults.lora_dropout;
  t.lora_targets = defaults.lora_targets;
  t.trainable = defaults.trainable;
  t.base_precision = defaults.base_precision;
  t.lora_base_digest = defaults.lora_base_digest;
  return merged;
}

void write_merged_checkpoint(const CheckpointInfo& checkpoint, const std::string& out_dir, const std::string& base) {
  if (!is_lora_run(checkpoint.train)) {
    throw std::invalid_argument("checkpoint " + checkpoint.dir + " has no LoRA adapters to merge");
  }
  std::error_code ec;
  if (std::filesystem::exists(out_dir, ec)) {
    throw std::invalid_argument("--out " + out_dir + " exists; name a new directory for the merged checkpoint");
  }
  AnyModel model = load_merged_model(checkpoint, torch::Device(torch::kCPU), base);
  save_checkpoint(out_dir, model.module(), /*optimizer=*/nullptr, merged_checkpoint_info(checkpoint));
}

}  // namespace lmzoo
