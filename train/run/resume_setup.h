// Setting up a resume: the run as its last checkpoint stores it, the settings a resume may change, the conflicts
// between asked and stored settings (config fields, compared as values or paths), and the resumed request.
// Leaves out command-line flags (tools/cli/cmd_train.cpp maps them to fields) and taking the run directory.
#pragma once
#include <string>
#include <vector>

#include "models/config.h"
#include "train/checkpoint/checkpoint.h"
#include "train/trainer.h"

namespace lmzoo {

// The run in RUN_DIR as its last/ checkpoint stores it, with train.out_dir RUN_DIR (where it is now) and a run from
// before decay_steps decaying over the steps it started with. Throws when RUN_DIR has no last/.
CheckpointInfo stored_run(const std::string& run_dir);

// The device setting RUN_DIR's complete last checkpoint stores; TrainConfig's default when there is none or it
// cannot be read (stored_run then says why). Read before the run directory is taken (ranks join first).
std::string stored_device(const std::string& run_dir);

// The TrainConfig fields a resume may change: how long and where it runs, and the optimizer's knobs (lowering the
// rate after a loss spike is the common case). The others fix the model, the data stream and the schedule's shape.
const std::vector<std::string>& resumable_settings();

// A setting asked of a resume that differs from the run's: its config field (config.json's name), both values as
// text.
struct SettingConflict {
  std::string field;
  std::string asked;
  std::string stored;
};

// The fields of ASKED that differ from STORED, in config.json order.
std::vector<SettingConflict> model_conflicts(const ModelConfig& asked, const ModelConfig& stored);

// The fields of ASKED that differ from STORED, except resumable_settings(), in config.json order; then the paths
// (data_dir, val_data, out_dir, init_checkpoint), which differ when they name other files.
std::vector<SettingConflict> train_conflicts(const TrainConfig& asked, const TrainConfig& stored);

// The request that continues RUN (stored_run) with the resumable settings of ASKED. Throws std::invalid_argument
// when ASKED changes any other setting or the run is already at its steps, and a runtime error when its data was
// prepared with another tokenizer.
TrainRequest resume_request(const CheckpointInfo& run, const TrainConfig& asked);

}  // namespace lmzoo
