// Whether a prepared data directory was made with a given tokenizer (its manifest's tokenizer hash).
#pragma once
#include <string>

#include "data/tokenizer.h"

namespace lmzoo {

// Throws std::runtime_error naming DATA_DIR and CHECKPOINT when the tokenizer that prepared DATA_DIR is not
// TOKENIZER (the checkpoint's).
void check_same_tokenizer(const std::string& data_dir, const Tokenizer& tokenizer, const std::string& checkpoint);

}  // namespace lmzoo
