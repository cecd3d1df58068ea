// lmzoo's public API, installed as <lmzoo/lmzoo.h>: what a program linking lmzoo::lmzoo uses.
//
// Load and use a checkpoint (any family):   Session (train/run/session.h); evaluate() (train/eval/evaluation.h);
//                                           generate() (train/eval/text_generation.h).
// Build a model:                            ModelConfig (models/config.h), find_preset (models/presets.h),
//                                           build_model / AnyModel (models/registry.h).
// Tokenize:                                 Tokenizer (data/tokenizers/tokenizer.h).
// Train:                                    a run set up and trained as lmzoo train does, with step and validation
//                                           callbacks: train_new_run, resume_run (train/run/run_training.h), RunSpec
//                                           (train/run/run_setup.h), TrainCallbacks (train/train_callbacks.h);
//                                           TrainConfig (train/train_config.h); the bare loop train_model
//                                           (train/trainer.h); the objectives' batches and losses: make_task,
//                                           task_loss (train/task.h).
// Save and load weights:                    save_checkpoint, read_checkpoint, load_model (train/checkpoint/checkpoint.h).
// Devices:                                  resolve_device (train/device/device.h).
//
// Errors are exceptions: std::invalid_argument for a value the caller passed that lmzoo cannot use, and
// std::runtime_error for files and data (missing, corrupt, another tokenizer's) and memory the machine lacks; the
// message is one line naming what is wrong.
// signal handlers.
#pragma once

#include "data/tokenizers/tokenizer.h"
#include "models/presets.h"
#include "models/registry.h"
#include "train/checkpoint/checkpoint.h"
#include "train/device/device.h"
#include "train/eval/evaluation.h"
#include "train/eval/text_generation.h"
#include "train/peft/lora_merge.h"
#include "train/peft/lora_setup.h"
#include "train/run/run_inputs.h"
#include "train/run/run_training.h"
#include "train/run/session.h"
#include "train/task.h"
#include "train/train_callbacks.h"
#include "train/train_config.h"
#include "train/trainer.h"
