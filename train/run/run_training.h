// A training run end to end, as lmzoo train runs it and as a program may: the run's request built on every rank
// (a resume's once its directory is taken), checked and agreed by the ranks, the device resolved once, the run
// directory taken (one place: lock + recovery), the trainer run, and a new run directory the failed run never used
// removed. Leaves out command-line flags and the summary line (tools/cli/cmd_train.cpp).
#pragma once
#include <functional>
#include <string>

#include "train/distributed/communicator.h"
#include "train/run/run_setup.h"
#include "train/trainer.h"

namespace lmzoo {

// How a run's request comes about.
struct RunPlan {
  // A run to resume: taken (locked, a crashed swap's leftovers recovered) before build_request reads it. Empty:
  // a new run, whose out_dir is taken once its request is agreed.
  std::string resume_dir;
  // Builds the request on every rank: new_run_request (run_setup.h) or resume_request (resume_setup.h), with the
  // program's callbacks and progress choice set on it.
  std::function<TrainRequest()> build_request;
};

// Every setting a rank trains with, as one string the ranks compare.
std::string run_settings(const TrainRequest& request);

// Runs PLAN on RANKS (null: one process; rank 0 owns the run directory). Each setup step succeeds on every rank or
// stops every rank with one line each. The run directory stays locked until it returns.
TrainResult run_training(const RunPlan& plan, Communicator* ranks = nullptr);

// A program's new run (new_run_request(SPEC)), with CALLBACKS and progress on stderr, in one process.
TrainResult train_new_run(const RunSpec& spec, const TrainCallbacks& callbacks = {});

// A program's resume of RUN_DIR: its stored settings with CHANGE applied (only resumable_settings() may differ),
// with CALLBACKS and progress on stderr, in one process.
TrainResult resume_run(const std::string& run_dir, const std::function<void(TrainConfig&)>& change,
                       const TrainCallbacks& callbacks = {});

}  // namespace lmzoo
