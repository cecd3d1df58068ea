// T5 presets (t5-small/base/large, v1.0; t5-v1_1-small/base); counting is parameter_count (parameter_sizes.h).
// Leaves out: registration in all_presets() (models/presets.cpp) and the larger shapes (3B, 11B, XL, XXL).
#pragma once
#include <vector>

#include "models/config.h"
#include "models/preset.h"

namespace lmzoo {

// vocab 32128, relative buckets 32 / max distance 128, RMSNorm eps 1e-6, pre-norm, no biases, d_kv 64,
// max_seq_len 512 (the pre-training input length). v1.0: ReLU, tied head, dropout 0.1. v1.1: gated GELU
// (geglu), untied head, dropout 0.0 (v1.1 pre-trained without dropout; turn it on to fine-tune).
const std::vector<Preset>& t5_presets();

}  // namespace lmzoo
