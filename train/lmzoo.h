// lmzoo's public API, installed as <lmzoo/lmzoo.h>: what a program linking lmzoo::lmzoo uses.
//
// Load and use a checkpoint (any family):   Session (train/session.h); evaluate() (train/evaluation.h);
//                                           generate() (train/text_generation.h).
// Build a model:                            ModelConfig (models/config.h), find_preset (models/presets.h),
//                                           build_model / AnyModel (models/registry.h).
// Tokenize:                                 Tokenizer (data/tokenizer.h).
// Train:                                    a run set up and trained as lmzoo train does, with step and validation
//                                           callbacks: train_new_run, resume_run (train/run_training.h), RunSpec
//                                           (train/run_setup.h), TrainCallbacks (train/train_callbacks.h);
//                                           TrainConfig (train/train_config.h); the bare loop train_model
//                                           (train/trainer.h); the objectives' batches and losses: make_task,
//                                           task_loss (train/task.h).
// Save and load weights:                    save_checkpoint, read_checkpoint, load_model (train/checkpoint.h).
// Devices:                                  resolve_device (train/device.h).
//
// Errors are exceptions: std::invalid_argument for a value the caller passed that lmzoo cannot use, and
// std::runtime_error for files and data (missing, corrupt, another tokenizer's) and memory the machine lacks; the
// message is one line naming what is wrong.
// signal handlers.
#pragma once

#include "data/tokenizer.h"
#include "models/presets.h"
#include "models/registry.h"
#include "train/checkpoint.h"
#include "train/device.h"
#include "train/run_inputs.h"
#include "train/run_training.h"
#include "train/evaluation.h"
#include "train/lora_merge.h"
#include "train/lora_setup.h"
#include "train/session.h"
#include "train/task.h"
#include "train/text_generation.h"
#include "train/train_callbacks.h"
#include "train/train_config.h"
#include "train/trainer.h"
