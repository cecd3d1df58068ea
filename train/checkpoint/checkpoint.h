// Checkpoints: a directory with config.json, model.pt, optimizer.pt, trainer_state.json, rng.pt, the tokenizer
// (tokenizer.model, or an HF tokenizer's files) and the marker `complete`, written to a hidden sibling and swapped
// into place.
#pragma once
#include <limits>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "data/chat/chat_settings.h"
#include "models/config.h"
#include "models/registry.h"
#include "train/checkpoint/checkpoint_swap.h"  // recover_run_dir
#include "train/train_config.h"
#include "train/trainer_state.h"

namespace lmzoo {

constexpr int kCheckpointFormatVersion = 1;

struct CheckpointInfo {
  std::string dir;
  ModelConfig model;
  TrainConfig train;
  TrainerState state;
  std::string tokenizer_model;  // Tokenizer::serialized(): stored as tokenizer.model, or as an HF tokenizer's files
  ChatSettings chat;            // chat_template.jinja and generation_config.json, where the model has them
};

// Writes a checkpoint directory: every file fsynced into .NAME.tmp-PID, the marker last, then swapped in
// (checkpoint_swap.h). optimizer may be null (weights-only checkpoint). A storage fault throws one line
// "cannot write PATH: CAUSE" with the previous checkpoint intact and the tmp directory removed.
void save_checkpoint(const std::string& dir, const std::shared_ptr<torch::nn::Module>& model,
                     torch::optim::Optimizer* optimizer, const CheckpointInfo& info);
// Read-only. A checkpoint directory resolves to itself; a run directory to its best/ checkpoint, else
// last/. A missing or incomplete RUN/best or RUN/last (a swap in progress, or a dead process's) resolves
// to its newest complete .NAME.tmp-* or .NAME.old.
std::string resolve_checkpoint_dir(const std::string& path);
// Reads config.json, trainer_state.json and the tokenizer; throws a clear error when incomplete or when
// the tokenizer's vocabulary differs from config.json's vocab_size.
CheckpointInfo read_checkpoint(const std::string& path);
// A LoRA checkpoint whose base does not hold the weights its adapters were trained on (bad input: exit 2).
class LoraBaseMismatch : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The base checkpoint of the LoRA checkpoint ADAPTERS: BASE_PATH, else the one it names; throws LoraBaseMismatch
// when its weights' digest is not the one the adapters were trained on.
CheckpointInfo read_lora_base(const CheckpointInfo& adapters, const std::string& base_path = "");

// Builds the model its config describes and loads its weights onto device. A LoRA checkpoint (adapter.safetensors)
// loads its base (BASE_PATH, else the one it names, digest checked), then its adapters, unmerged.
AnyModel load_model(const CheckpointInfo& info, const torch::Device& device, const std::string& base_path = "");
// Loads the checkpoint's weights into module (e.g. a pretrained Bert into a classifier's encoder). Every
// tensor's name and shape must match both ways, else it throws naming the first differences. The module's own
// values are dropped first, so that one copy of the weights is held at a time; after a throw it is not usable.
void load_weights(const CheckpointInfo& info, const std::shared_ptr<torch::nn::Module>& module);
// Starts model from a pretrained checkpoint's weights (--init): the whole model when the configs
// match, or a classifier's encoder from a bert checkpoint. Throws when the shapes differ.
void init_from_checkpoint(AnyModel& model, const CheckpointInfo& pretrained);
void load_optimizer_state(const CheckpointInfo& info, torch::optim::Optimizer& optimizer);
// Restores the global CPU (and CUDA) random generators saved with the checkpoint.
void restore_rng_state(const CheckpointInfo& info);

}  // namespace lmzoo
