// One named model preset: a published shape. Leaves out: the list of presets and lookup (models/presets.h), which
// the family preset files feed.
#pragma once
#include <string>

#include "models/config.h"

namespace lmzoo {

struct Preset {
  std::string name;
  std::string description;
  ModelConfig config;  // vocab_size 0 means "from the tokenizer"
  std::string hf_twin;  // the Hugging Face hub model of this shape (lmzoo import reads it), or empty
};

}  // namespace lmzoo
