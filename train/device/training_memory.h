// A training run's memory estimate from its settings: TrainConfig's "Fine-tuning and memory" fields as a
// TrainingPlan, the workload on its device, and the predicted peak with its parts as lines (lmzoo train --dry-run).
// Leaves out: the estimate's formulas (models/memory_estimate.h) and measuring (train/device/device_peak.h).
#pragma once
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/memory_estimate.h"
#include "train/train_config.h"

namespace lmzoo {

// CFG's LoRA settings (lora_settings), --trainable name parts, base precision and checkpointing policy. Throws
// std::invalid_argument for a LoRA target or a checkpointing setting outside its set (as TrainConfig::validate).
TrainingPlan training_plan(const TrainConfig& cfg);

// The estimated peak of training MODEL with CFG on DEVICE: one micro-batch at the model's context; on a CPU with
// the fused kernels' savings and the process's runtime memory (the peak RSS), on a GPU the tensors alone.
MemoryEstimate estimate_training_run(const ModelConfig& model, const TrainConfig& cfg, const torch::Device& device);

// The estimate as lines: "weights      497.8 MB  (124,439,808 parameters, fp32)" per part, then the total.
std::vector<std::string> memory_report_lines(const MemoryEstimate& estimate, const ModelConfig& model,
                                             const TrainConfig& cfg, const torch::Device& device);

}  // namespace lmzoo
