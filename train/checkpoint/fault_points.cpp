// Fault points: a process-wide hook, null unless a fault-injection build installs one.
#include "train/checkpoint/fault_points.h"

#include <atomic>

namespace lmzoo {

namespace {
std::atomic<FaultHook> g_hook{nullptr};
}  // namespace

void install_fault_hook(FaultHook hook) { g_hook = hook; }

void fault_point(const char* point, int64_t step) {
  if (const FaultHook hook = g_hook.load()) hook(point, step);
}

}  // namespace lmzoo
