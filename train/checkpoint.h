// Checkpoints: a directory with config.json, model.pt, optimizer.pt, trainer_state.json, rng.pt and
// tokenizer.model, written to a temporary sibling and renamed into place (never half-written).
#pragma once
#include <limits>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "models/config.h"
#include "models/registry.h"
#include "train/train_config.h"
#include "train/trainer_state.h"

namespace lmzoo {

constexpr int kCheckpointFormatVersion = 1;

struct CheckpointInfo {
  std::string dir;
  ModelConfig model;
  TrainConfig train;
  TrainerState state;
  std::string tokenizer_model;  // serialized SentencePiece model
};

// Writes a checkpoint directory atomically. optimizer may be null (weights-only checkpoint).
void save_checkpoint(const std::string& dir, const std::shared_ptr<torch::nn::Module>& model,
                     torch::optim::Optimizer* optimizer, const CheckpointInfo& info);
// A run directory resolves to its best/ checkpoint, else last/; a checkpoint directory to itself.
std::string resolve_checkpoint_dir(const std::string& path);
// Reads config.json, trainer_state.json and the tokenizer; throws a clear error when incomplete.
CheckpointInfo read_checkpoint(const std::string& path);
// Builds the model its config describes and loads its weights onto device.
AnyModel load_model(const CheckpointInfo& info, const torch::Device& device);
// Loads the checkpoint's weights into module (e.g. a pretrained Bert into a classifier's encoder).
void load_weights(const CheckpointInfo& info, const std::shared_ptr<torch::nn::Module>& module);
// Starts model from a pretrained checkpoint's weights (--init): the whole model when the configs
// match, or a classifier's encoder from a bert checkpoint. Throws when the shapes differ.
void init_from_checkpoint(AnyModel& model, const CheckpointInfo& pretrained);
void load_optimizer_state(const CheckpointInfo& info, torch::optim::Optimizer& optimizer);
// Restores the global CPU (and CUDA) random generators saved with the checkpoint.
void restore_rng_state(const CheckpointInfo& info);

}  // namespace lmzoo
