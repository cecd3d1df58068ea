// Folding a LoRA checkpoint's adapters into its base: the merged model in memory (for export) or written as a
// whole-model checkpoint that every command accepts. Leaves out: the adapters (models/lora.h) and PEFT files
// (train/peft/peft_export.h).
#pragma once
#include <string>

#include "models/registry.h"
#include "train/checkpoint/checkpoint.h"

namespace lmzoo {

// CHECKPOINT's model on DEVICE with its adapters folded in (a checkpoint without adapters: as load_model). BASE:
// the base checkpoint to fold onto (empty: the one it names); its weights must be the ones the adapters were
// trained on (else LoraBaseMismatch).
AnyModel load_merged_model(const CheckpointInfo& checkpoint, const torch::Device& device, const std::string& base = "");

// What the merged model's checkpoint stores: CHECKPOINT's configs and state with the LoRA settings cleared.
CheckpointInfo merged_checkpoint_info(const CheckpointInfo& checkpoint);

// Writes the merged model of the LoRA checkpoint CHECKPOINT to OUT_DIR (which must not exist) as a weights-only
// checkpoint with the tokenizer. Throws std::invalid_argument for a checkpoint without adapters or an existing
// OUT_DIR, LoraBaseMismatch for the wrong base; nothing is written then.
void write_merged_checkpoint(const CheckpointInfo& checkpoint, const std::string& out_dir, const std::string& base = "");

}  // namespace lmzoo
