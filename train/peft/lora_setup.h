// A LoRA run's model: adapters attached to a loaded base, everything else frozen (but --trainable names and a
// classifier's head), the frozen projections optionally stored in bf16; its checkpoints' adapter file and the
// digest that ties them to their base. Leaves out: the adapters themselves (models/lora.h).
#pragma once
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/lora.h"
#include "models/registry.h"
#include "train/train_config.h"

namespace lmzoo {

// The tensors of a LoRA checkpoint (what trains), in place of model.pt.
constexpr const char* kAdapterFile = "adapter.safetensors";

// CONFIG's LoRA settings (rank 0: none); throws std::invalid_argument for bad targets or ranges.
LoraSettings lora_settings(const TrainConfig& config);

// True when CONFIG trains adapters on a frozen base.
inline bool is_lora_run(const TrainConfig& config) { return config.lora_rank > 0; }

// --trainable's comma-separated name parts ("ln_,,lm_head" -> {"ln_", "lm_head"}).
std::vector<std::string> trainable_name_parts(const TrainConfig& config);

// Freezes every parameter of MODEL (adapters attached) but the adapters, those whose name contains one of
// CONFIG.trainable's comma-separated parts, and a bert classifier's head. Returns the number of trainable
// parameters. Throws std::invalid_argument when a --trainable part matches no parameter.
int64_t freeze_all_but_trainable(AnyModel& model, const TrainConfig& config);

// --base-precision bf16 or int8: stores MODEL's frozen projection weights (attention and feed-forward) in bf16, or
// in int8 with per-output-row scales (kWeightScaleBuffer beside each weight).
void lower_frozen_projections(AnyModel& model, BasePrecision precision);

// A digest of checkpoint DIR's weights (model.pt's bytes): "fnv1a64:<16 hex digits>:<size>".
std::string weights_digest(const std::string& checkpoint_dir);

// Writes MODEL's trainable tensors (requires_grad) to PATH as safetensors, durably.
void save_trainable_tensors(const std::string& path, const torch::nn::Module& model);

// Loads every tensor of the adapter file PATH into MODEL by name; throws when a name is unknown, a shape differs,
// or one of MODEL's adapter tensors is missing from the file.
void load_trainable_tensors(const std::string& path, torch::nn::Module& model);

}  // namespace lmzoo
