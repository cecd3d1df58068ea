// GPT-NeoX-style decoder presets (Pythia): parallel residual, partial rotary, LayerNorm and biases, untied head.
// Leaves out: registration in all_presets() (models/presets.cpp); counting is parameter_count (parameter_sizes.h).
#pragma once
#include <vector>

#include "models/preset.h"

namespace lmzoo {

// pythia-70m, pythia-160m, pythia-410m: EleutherAI's shapes with their 50304-row vocabulary.
const std::vector<Preset>& gpt_neox_presets();

}  // namespace lmzoo
