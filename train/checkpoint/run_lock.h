// One live run per run directory: an flock on RUN_DIR/.lock, held while the run lives.
#pragma once
#include <string>

namespace lmzoo {

// Takes the run directory's lock (creating the directory if needed) or throws one line naming the process
// that holds it. The kernel releases the lock when this process exits, however it dies.
class RunLock {
 public:
  explicit RunLock(const std::string& run_dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace lmzoo
