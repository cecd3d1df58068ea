// Setting up a run that starts (not a resume) from a plain description: a new model on prepared data, a
// continued run from a checkpoint's model, weights and tokenizer, or a bert classifier fine-tuned on labelled
// text. Leaves out command-line flags (tools/cli/cmd_train.cpp), resumes (resume_setup.h) and running (run_training.h).
#pragma once
#include <optional>
#include <string>

#include "data/tokenizers/tokenizer.h"
#include "models/config.h"
#include "train/checkpoint/checkpoint.h"
#include "train/trainer.h"

namespace lmzoo {

// A run that starts: what a program fills in (lmzoo train fills it from its flags).
struct RunSpec {
  // data_dir (prepared data; classify: a labelled .tsv/.jsonl file), out_dir, objective and every setting.
  // init_checkpoint: start from that checkpoint (a run directory or lmzoo import's output): its model, weights
  // and tokenizer (a continued run; with objective classify, a classifier over its bert). val_data: classify's
  // labelled validation file.
  TrainConfig train;
  std::string preset;  // a new model: this preset's (lmzoo presets), sized to the data's vocabulary; else `model`
  ModelConfig model;   // a new model without preset (vocab_size 0: the data tokenizer's; else it must equal it)
  std::optional<double> dropout;  // from a checkpoint: its model's dropout replaced
};

// PATH absolute and normalised, as runs store their paths (so a resume works from any working directory).
std::string absolute_path(const std::string& path);

// The chat template and end-of-turn ids a run's checkpoints carry: those its prepared conversations were rendered
// with (DATA a chat directory), else PRETRAINED's.
ChatSettings chat_settings_for(const std::string& data, const ChatSettings& pretrained);

// The objective a model of ARCH trains with on DATA when none is named: chat for a gpt on prepared conversations,
// else the family's default (seq2seq for a t5 on prepared pairs).
Objective data_objective(Arch arch, const std::string& data);

// The objective a run from checkpoint PRETRAINED trains with when none is named: its family's on DATA (prepared
// data or pairs), classify for a bert given a labelled file.
Objective checkpoint_objective(const CheckpointInfo& pretrained, const std::string& data);

// MODEL for data with VOCAB tokens: a vocab_size of 0 becomes VOCAB; any other must equal it (else throws).
ModelConfig sized_to_vocab(ModelConfig model, int64_t vocab);

// A new model (spec.preset's or spec.model) on prepared data whose tokenizer (data_tokenizer) is TOKENIZER.
TrainRequest new_model_request(const RunSpec& spec, const Tokenizer& tokenizer);

// spec.train.init_checkpoint's model, weights and tokenizer trained further on data prepared with that tokenizer
// (refused for a classifier checkpoint).
TrainRequest continued_run_request(const RunSpec& spec);

// A classifier over spec.train.init_checkpoint's bert, with the labels of the labelled file spec.train.data_dir,
// its tokenizer the checkpoint's.
TrainRequest classifier_request(const RunSpec& spec);

// One of the three above, as SPEC says: classify, else a continued run when it names an init_checkpoint, else a
// new model on the data's tokenizer.
TrainRequest new_run_request(const RunSpec& spec);

}  // namespace lmzoo
