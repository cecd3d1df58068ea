// A checkpoint opened for use by a program: its stored configs, its tokenizer, one resolved device, and its model
// built on that device the first time it is asked for (so that a memory check can come first).
// Invariants: the device is resolved once, when the session opens; the model is any family (gpt, bert, bert
// classifier, t5), loaded with the checkpoint's weights and in eval mode; the tokenizer is the checkpoint's own.
#pragma once
#include <optional>
#include <string>

#include <torch/torch.h>

#include "data/tokenizers/tokenizer.h"
#include "models/memory_estimate.h"
#include "models/registry.h"
#include "train/checkpoint/checkpoint.h"
#include "train/run/run_inputs.h"

namespace lmzoo {

// Throws std::runtime_error naming the figures when running MODEL for inference at WORKLOAD would not fit in
// DEVICE's memory (this machine's for the CPU). WHAT says what was asked ("evaluating at --batch-size 8").
void require_inference_fits(const ModelConfig& model, const Workload& workload, const torch::Device& device,
                            const std::string& what);

class Session {
 public:
  // Opens PATH (a run directory: its best/, else last/; or a checkpoint directory) on DEVICE ("auto", "cpu",
  // "cuda", "cuda:N"). Reads configs and tokenizer; builds no model yet.
  static Session open(const std::string& path, const std::string& device = "auto");

  const CheckpointInfo& info() const { return info_; }
  const ModelConfig& config() const { return info_.model; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  const torch::Device& device() const { return device_; }
  Arch arch() const { return info_.model.arch; }
  ModelKind kind() const { return model_kind(info_.model); }
  bool is_classifier() const { return kind() == ModelKind::kClassifier; }  // a BertClassifier
  // The model, built and loaded on the first call.
  AnyModel& model();
  bool model_loaded() const { return model_.has_value(); }

 private:
  Session(CheckpointInfo info, Tokenizer tokenizer, torch::Device device);
  CheckpointInfo info_;
  Tokenizer tokenizer_;
  torch::Device device_;
  std::optional<AnyModel> model_;
};

}  // namespace lmzoo
