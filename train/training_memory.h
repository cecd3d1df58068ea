// A training run's memory estimate from its settings: TrainConfig's "Fine-tuning and memory" fields as a
// TrainingPlan, the workload on its device, and the predicted peak with its parts as lines (lmzoo train --dry-run).
// Leaves out: the estimate's formulas (models/memory_estimate.h) and measuring (train/device_peak.h).
#pragma once
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/memory_estimate.h"
#include "train/train_config.h"

namespace lmzoo {

// CFG's LoRA rank, alpha, dropout and targets, --trainable names, base precision and checkpointing, parsed.
// Throws std::invalid_argument naming a LoRA target or a checkpointing setting outside its set.
TrainingPlan training_plan(const TrainConfig& cfg);

// "none" -> 0, "blocks" -> 1, "every-N" -> N (N >= 1): which blocks keep only their input. Throws
// std::invalid_argument for anything else.
int64_t checkpoint_interval(const std::string& setting);

// The estimated peak of training MODEL with CFG on DEVICE: one micro-batch at the model's context; on a CPU with
// the fused kernels' savings and the process's runtime memory (the peak RSS), on a GPU the tensors alone.
MemoryEstimate estimate_training_run(const ModelConfig& model, const TrainConfig& cfg, const torch::Device& device);

// The estimate as lines: "weights      497.8 MB  (124,439,808 parameters, fp32)" per part, then the total.
std::vector<std::string> memory_report_lines(const MemoryEstimate& estimate, const ModelConfig& model,
                                             const TrainConfig& cfg, const torch::Device& device);

}  // namespace lmzoo
