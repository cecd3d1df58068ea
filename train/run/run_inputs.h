// The inputs a training run (or an eval) is given, opened with one-line errors that say what is wrong: a
// checkpoint (a stored config that fails validation reported as corruption), the tokenizer of prepared data
// (checked against its manifest), and data checked against a checkpoint's tokenizer. Leaves out reading the
// files themselves (checkpoint.h, data/corpus/shards.h).
#pragma once
#include <string>

#include "data/tokenizers/tokenizer.h"
#include "train/checkpoint/checkpoint.h"

namespace lmzoo {

// read_checkpoint, with a stored config that fails validation reported as a runtime error naming the checkpoint
// (std::invalid_argument is kept for values the user gave).
CheckpointInfo open_checkpoint(const std::string& path);

// The tokenizer that prepared DATA_DIR; throws when it is not the one its manifest names.
Tokenizer data_tokenizer(const std::string& data_dir);

// Throws when DATA_DIR was prepared with another tokenizer than TOKENIZER, CHECKPOINT's.
void check_same_tokenizer(const std::string& data_dir, const Tokenizer& tokenizer, const std::string& checkpoint);

}  // namespace lmzoo
