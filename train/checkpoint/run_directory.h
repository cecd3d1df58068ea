// A run directory's life around a run: what in it is run state, refusing a new run where one is, taking it for a
// run (its lock, then crash leftovers recovered: the one place both happen), and removing a new one a failed run
// left unused. Leaves out the lock itself (run_lock.h) and the checkpoint swap (checkpoint_swap.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "train/checkpoint/run_lock.h"

namespace lmzoo {

// A complete last/ (or a leftover of a crashed swap that holds one) means a run is already there.
bool holds_checkpoint(const std::string& out_dir);

// What in OUT_DIR belongs to a run: checkpoints (complete or not, hidden swap leftovers included), a non-empty
// metrics.jsonl, curves.svg, sorted. Only the lock file and an empty metrics.jsonl (a run killed before it
// logged) are not.
std::vector<std::string> run_state_in(const std::string& out_dir);

// A new run never starts in a directory that holds any run state, whatever part of it is missing: throws
// std::invalid_argument naming what is there and what to do.
void refuse_existing_run(const std::string& out_dir);

// Whether a run taking its directory starts there or continues the run there.
enum class RunDirUse { kNewRun, kResume };

// Takes RUN_DIR for this process's run until the returned lock is dropped (or the process ends): a new run's
// directory must hold no run state (checked before the lock creates it, and again under the lock); a resumed
// run's must exist. Under the lock, a checkpoint swap a crash cut short is recovered (recover_run_dir).
std::unique_ptr<RunLock> take_run_dir(const std::string& run_dir, RunDirUse use);

// Removes RUN_DIR when the run wrote nothing there (no complete checkpoint, no metrics record): for a directory
// that did not exist before a run that failed.
void remove_unused_run_dir(const std::string& run_dir);

}  // namespace lmzoo
