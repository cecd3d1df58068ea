// Named points where a fault-injection build may stop the process (a crash, a power cut, a rank dying); in the
// shipped binary no hook is installed and every point is a no-op that reads nothing from the environment.
#pragma once
#include <cstdint>

namespace lmzoo {

// Called with the point's name and its step (-1 where the point has none). The points: save_checkpoint's steps in
// order, "files-written" (every file but the marker), "marker-written", "old-moved", "new-moved", "old-removed";
// and "step" as the trainer starts each step (step = the step about to run).
using FaultHook = void (*)(const char* point, int64_t step);

// Installs the process's hook (null: none). Only the test build's lmzoo_faults binary installs one.
void install_fault_hook(FaultHook hook);
// Runs the installed hook, if any.
void fault_point(const char* point, int64_t step = -1);

}  // namespace lmzoo
