// Checkpoints: a directory with config.json, model.pt, optimizer.pt, trainer_state.json, rng.pt and
// tokenizer.model, written to a temporary sibling and renamed into place (never half-written).
#pragma once
#include <limits>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "models/config.h"
#include "models/gpt.h"
#include "train/train_config.h"

namespace lmzoo {

constexpr int kCheckpointFormatVersion = 1;

// Everything the trainer needs to continue exactly where it stopped.
struct TrainerState {
  int64_t step = 0;  // optimizer steps completed
  double best_val_loss = std::numeric_limits<double>::infinity();
  int64_t tokens_seen = 0;
  double elapsed_s = 0.0;
};
void to_json(nlohmann::json& j, const TrainerState& s);
void from_json(const nlohmann::json& j, TrainerState& s);

struct CheckpointInfo {
  std::string dir;
  ModelConfig model;
  TrainConfig train;
  TrainerState state;
  std::string tokenizer_model;  // serialized SentencePiece model
};

// Writes a checkpoint directory atomically. optimizer may be null (weights-only checkpoint).
void save_checkpoint(const std::string& dir, GPT& model, torch::optim::Optimizer* optimizer,
                     const CheckpointInfo& info);
// A run directory resolves to its best/ checkpoint, else last/; a checkpoint directory to itself.
std::string resolve_checkpoint_dir(const std::string& path);
// Reads config.json, trainer_state.json and the tokenizer; throws a clear error when incomplete.
CheckpointInfo read_checkpoint(const std::string& path);
// Builds the model and loads its weights onto device.
GPT load_model(const CheckpointInfo& info, const torch::Device& device);
void load_optimizer_state(const CheckpointInfo& info, torch::optim::Optimizer& optimizer);
// Restores the global CPU (and CUDA) random generators saved with the checkpoint.
void restore_rng_state(const CheckpointInfo& info);

}  // namespace lmzoo
