// The chat objective: prepared conversations (lmzoo prepare --chat) as next-token batches scored on the answers only,
// one example per row padded to the batch's longest, or packed several to a row (segment ids keep them apart).
// Leaves out: rendering and tokenizing (data/chat/), the loss and its weighting (task.cpp, trainer.cpp).
#pragma once
#include <cstdint>
#include <memory>

#include "data/corpus/data_shard.h"
#include "data/tokenizers/tokenizer.h"
#include "models/config.h"
#include "train/task.h"
#include "train/train_config.h"

namespace lmzoo {

// What fitting the training examples to rows did, for the run's summary.
struct ChatFitSummary {
  int64_t examples = 0, truncated = 0, dropped = 0;  // dropped: no answer token left after truncation
  int64_t rows = 0;                                  // packed rows (or the examples, unpacked)
};

// The chat task over config.data_dir for a gpt MODEL: rows of config.max_length tokens (0: model.max_seq_len).
// Throws std::invalid_argument for --max-length past the model's context, and std::runtime_error, counting them,
// when examples are longer than a row under --truncate refuse.
std::unique_ptr<TrainingTask> make_chat_task(const ModelConfig& model, const TrainConfig& config,
                                             const Tokenizer& tokenizer, DataShard shard, ChatFitSummary* summary = nullptr);

}  // namespace lmzoo
