// Run-directory checks, taking a directory for a run (lock + recovery) and removing an unused new one.
#include "train/checkpoint/run_directory.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "train/checkpoint/checkpoint_swap.h"

namespace lmzoo {

bool holds_checkpoint(const std::string& out_dir) { return !find_complete_checkpoint(out_dir, "last").empty(); }

std::vector<std::string> run_state_in(const std::string& out_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::directory_iterator it(out_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool empty_metrics = name == "metrics.jsonl" && it->is_regular_file() && fs::file_size(it->path(), ec) == 0;
    const bool run_file = name == "last" || name == "best" || name == "metrics.jsonl" || name == "curves.svg" ||
                          !checkpoint_name_of_hidden(name).empty();
    if (run_file && !empty_metrics) found.push_back(name);
  }
  std::sort(found.begin(), found.end());
  return found;
}

void refuse_existing_run(const std::string& out_dir) {
  const std::vector<std::string> found = run_state_in(out_dir);
  if (found.empty()) return;
  std::string names;
  for (const auto& name : found) names += (names.empty() ? "" : ", ") + name;
  const std::string how = holds_checkpoint(out_dir) ? "use --resume " + out_dir + " or another --out"
                                                    : "it has no complete last/ to resume from: use another --out, or "
                                                      "move those files away";
  throw std::invalid_argument(out_dir + " already holds a run (" + names + "); " + how);
}

std::unique_ptr<RunLock> take_run_dir(const std::string& run_dir, RunDirUse use) {
  if (use == RunDirUse::kResume && !std::filesystem::is_directory(run_dir)) {
    throw std::runtime_error(run_dir + " has no last/ checkpoint to resume from");
  }
  if (use == RunDirUse::kNewRun) refuse_existing_run(run_dir);  // before the lock creates the directory
  auto lock = std::make_unique<RunLock>(run_dir);
  if (use == RunDirUse::kNewRun) refuse_existing_run(run_dir);  // a run that finished meanwhile
  // A swap a crash cut short: its complete checkpoint back in place as last/ (for a new run, the leftovers of one
  // killed before its first checkpoint).
  recover_run_dir(run_dir);
  return lock;
}

void remove_unused_run_dir(const std::string& run_dir) {
  std::error_code ec;
  const auto metrics_size = std::filesystem::file_size(run_dir + "/metrics.jsonl", ec);
  const bool nothing_written = !holds_checkpoint(run_dir) && (ec || metrics_size == 0);
  if (nothing_written) std::filesystem::remove_all(run_dir, ec);
}

}  // namespace lmzoo
