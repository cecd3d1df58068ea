// Crash-proof replacement of a checkpoint directory: the hidden siblings used while RUN/NAME is replaced
// (.NAME.tmp-PID, .NAME.old), the completeness marker, the read-only lookup that finds a complete
// checkpoint at every instant of a swap, and the recovery of a dead process's leftovers.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace lmzoo {

// Written last into a checkpoint directory, holding the step: its presence makes the directory complete.
// Directories written by older lmzoo have none: a target (last/, best/, a standalone checkpoint) or a
// .NAME.old (always a former target) counts as complete with config.json and trainer_state.json.
inline constexpr const char* kCompleteMarker = "complete";

// The hidden siblings of a target such as RUN/last: RUN/.last.tmp-PID (this process) and RUN/.last.old.
std::string checkpoint_tmp_dir(const std::string& target);
std::string checkpoint_old_dir(const std::string& target);

// Writes the marker (the last file of a checkpoint) and fsyncs dir.
void mark_checkpoint_complete(const std::string& dir, int64_t step);
// The step of a complete checkpoint directory, or nullopt. legacy_ok: accept one without a marker.
std::optional<int64_t> complete_checkpoint_step(const std::string& dir, bool legacy_ok);

// Replaces target by the complete checkpoint in tmp: target -> .NAME.old, tmp -> target, parent fsynced,
// .NAME.old removed. At every instant one complete checkpoint is found by find_complete_checkpoint.
// When it throws, target is as before (tmp is the caller's to remove).
void swap_in_checkpoint(const std::string& tmp, const std::string& target);
// Removes a checkpoint directory, making it incomplete first (marker and trainer_state.json go first),
// so that a kill halfway never leaves a directory that passes for complete.
void discard_checkpoint_dir(const std::string& dir);

// Read-only: DIR/NAME when complete, else the complete .NAME.tmp-* or .NAME.old with the highest step,
// else "". (DIR/NAME wins over a newer hidden sibling: a reader never picks a directory about to move.)
std::string find_complete_checkpoint(const std::string& dir, const std::string& name);
// "last" for ".last.tmp-123" or ".last.old"; "" for any other name.
std::string checkpoint_name_of_hidden(const std::string& filename);

// Run at the start of every run on RUN_DIR while holding its lock (no other process writes there):
// for last/ and best/, a missing target is replaced by its newest complete hidden sibling; every
// .NAME.tmp-* and .NAME.old is then removed, except complete ones while the target is present but
// incomplete (never delete the only complete copy). Other files are left alone. Throws one line on
// a file-system error.
void recover_run_dir(const std::string& run_dir);

}  // namespace lmzoo
