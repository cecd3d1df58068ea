// Training tasks: what the trainer needs from an (architecture, objective) pair — seeded train and
// validation batches in one shape (TrainBatch) — and the loss of a batch under any model.
// Leaves out: the loop itself (trainer.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "data/corpus/data_shard.h"
#include "data/tokenizers/tokenizer.h"
#include "models/registry.h"
#include "train/objectives.h"
#include "train/train_config.h"

namespace lmzoo {

// The union of what the objectives feed a model; unused fields stay undefined.
struct TrainBatch {
  torch::Tensor input_ids;       // (B, T) int64
  torch::Tensor labels;          // (B, T) int64 target ids, -1 where not scored; (B,) class ids for classify
  torch::Tensor attention_mask;  // (B, T) int64, 1 real / 0 pad (bert)
  torch::Tensor token_type_ids;  // (B, T) int64 (bert)
  torch::Tensor decoder_input_ids;  // (B, T) int64 (t5): labels shifted right after the start id; then
                                    // input_ids / attention_mask are the encoder's (B, S) and labels (B, T)
  torch::Tensor prefix_len;         // (B,) int64 (gpt prefix-LM): positions < prefix_len attend bidirectionally
  torch::Tensor segment_ids;        // (B, T) int64 (gpt packed chat rows): attention and positions per segment
  torch::Tensor scored_positions;   // (N) int64 (bert MLM): flat indices b * T + t of the labels >= 0, found on
                                    // the CPU with the batch, so a CUDA step never waits to learn their count
  TrainBatch to(const torch::Device& device) const;
};

class TrainingTask {
 public:
  virtual ~TrainingTask() = default;
  // A pure function of (seed, step, micro_step): resuming needs only the step.
  virtual TrainBatch train_batch(int64_t step, int64_t micro_step) const = 0;
  // The fixed validation sample: batches 0 .. val_batches()-1 (0: the data has no validation split).
  virtual int64_t val_batches() const = 0;
  virtual TrainBatch val_batch(int64_t i) const = 0;
  // Token positions one micro-batch feeds the model (for tokens/s).
  virtual int64_t tokens_per_batch() const = 0;
  // How validation batches are weighted in the mean: by rows (false), or by scored targets (true: chat, whose
  // loss is the mean over all answer tokens).
  virtual bool validation_weighs_targets() const { return false; }
  // A line about how the data was fitted to rows (chat: truncated and packed examples); empty: nothing to say.
  virtual std::string summary() const { return ""; }
};

// The task for config.objective over config.data_dir (and config.val_data) with TOKENIZER's special ids (and
// its encoder and word starts for labelled text and whole-word masking). The train batches are `shard`'s rows
// of each step (data_shard.h); the validation sample is the whole one on every rank. Throws
// std::invalid_argument when the objective does not fit the model's arch or the tokenizer lacks an id it needs.
std::unique_ptr<TrainingTask> make_task(const ModelConfig& model, const TrainConfig& config,
                                        const Tokenizer& tokenizer, DataShard shard = {});

// Causal LM batches of seeded random token ids over [0, model.vocab_size) for a gpt (what lmzoo bench trains on
// without data): each row drawn from its own row_seed, as the data's batches are; config.eval_iters validation
// batches from a seed of their own. Throws std::invalid_argument for another arch or objective.
std::unique_ptr<TrainingTask> make_random_token_task(const ModelConfig& model, const TrainConfig& config,
                                                     DataShard shard = {});

// The targets a batch scores (labels >= 0): what its mean loss is a mean over.
int64_t scored_targets(const TrainBatch& batch);

// Mean loss of a batch: next-token cross-entropy over the scored positions (gpt; with prefix_len the
// prefix-LM mask), masked-token cross-entropy over the selected positions (bert), class cross-entropy
// (bert-classifier), or target cross-entropy over the non-pad labels (t5). HEAD kFused: the output layer and the
// cross-entropy in row chunks, no logits tensor kept (gpt, t5, bert's MLM; the classifier's head is small).
torch::Tensor task_loss(AnyModel& model, const TrainBatch& batch, LossHead head = LossHead::kLogits);

// Mean task_loss over the validation sample, weighted by rows, in eval mode and without gradients.
double validation_loss(AnyModel& model, const TrainingTask& task, const torch::Device& device,
                       Precision precision);

// The part of the validation sample one rank scores (batch i on rank i % world_size): the weighted loss sum and
// the weights (rows, or scored targets where the task says so), which add up over ranks to validation_loss's mean.
struct ValidationSum {
  double weighted_loss = 0.0;
  int64_t rows = 0;  // the sum of the weights
};
ValidationSum validation_loss_sum(AnyModel& model, const TrainingTask& task, const torch::Device& device,
                                  Precision precision, DataShard shard);

}  // namespace lmzoo
