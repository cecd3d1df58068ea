// Linked into lmzoo_faults only (the suite's fault-injection build of the CLI): installs a hook that kills the
// process with SIGKILL at the point named by LMZOO_TEST_CRASH_AT (a checkpoint-swap step) or as training starts
// step LMZOO_TEST_KILL_AT_STEP, as a crash or a dying rank would; or throws the allocator's out-of-memory error
// (c10::OutOfMemoryError, as CUDA's caching allocator does) as training starts step LMZOO_TEST_OOM_AT_STEP.
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

#include <c10/util/Exception.h>

#include "train/checkpoint/fault_points.h"

namespace {

void kill_at_requested_point(const char* point, int64_t step) {
  if (const char* crash_at = std::getenv("LMZOO_TEST_CRASH_AT"); crash_at && std::strcmp(crash_at, point) == 0) {
    std::raise(SIGKILL);
  }
  const char* kill_at = std::getenv("LMZOO_TEST_KILL_AT_STEP");
  if (kill_at && std::strcmp(point, "step") == 0 && std::to_string(step) == kill_at) std::raise(SIGKILL);
  const char* oom_at = std::getenv("LMZOO_TEST_OOM_AT_STEP");
  if (oom_at && std::strcmp(point, "step") == 0 && std::to_string(step) == oom_at) {
    throw c10::OutOfMemoryError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                                "CUDA out of memory. Tried to allocate 2.00 GiB (injected by the test build)");
  }
}

const bool installed = (lmzoo::install_fault_hook(kill_at_requested_point), true);

}  // namespace
