// Llama-style decoder presets: RoPE, RMSNorm, SwiGLU, grouped-query attention, no biases, untied head.
// Leaves out: registration in all_presets() (models/presets.cpp); counting is parameter_count (parameter_sizes.h).
#pragma once
#include <vector>

#include "models/preset.h"

namespace lmzoo {

// llama-nano (a CPU shape, vocabulary from the tokenizer), tinyllama-1.1b, llama2-7b, llama2-13b,
// llama2-70b: the published shapes with a 32000-token vocabulary.
const std::vector<Preset>& llama_presets();

}  // namespace lmzoo
