// A training run that runs out of memory (CUDA's caching allocator or the CPU's) as one line naming the run's
// estimated peak, the device's memory and the switches that lower the peak.
#pragma once
#include <string>

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include "models/config.h"
#include "train/train_config.h"

namespace lmzoo {

// True for c10::OutOfMemoryError (CUDA's caching allocator) and the CPU allocator's "can't allocate memory".
bool is_out_of_memory(const c10::Error& error);

// "out of memory on cuda:0: this run needs about 31.8 GB by its estimate (weights ..., ...), the device has
// 85.1 GB; lower it with ..." for MODEL trained with CFG on DEVICE.
std::string out_of_memory_message(const ModelConfig& model, const TrainConfig& cfg, const torch::Device& device);

}  // namespace lmzoo
