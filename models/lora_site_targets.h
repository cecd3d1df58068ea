// Which LoRA target each output part of every adaptable projection of a model is (gpt's c_attn: q, k, v), for
// mapping adapters named by another library onto lmzoo's. Leaves out: the adapters (models/lora.h).
#pragma once
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/lora.h"

namespace lmzoo {

struct LoraSiteTargets {
  std::string linear;               // full module name, e.g. "h.0.attn.c_attn"
  std::vector<LoraTarget> parts;    // the targets of its output rows' parts, in order
};

// Every projection of MODEL that adapters can sit on, in module order (whether or not adapters are attached).
std::vector<LoraSiteTargets> lora_site_targets(const torch::nn::Module& model);

}  // namespace lmzoo
