// HostSyncCheck over c10::cuda::warning_state()'s sync debug mode (CUDA builds only).
#include "train/device/host_sync_check.h"

#include "lmzoo_build_config.h"
#if LMZOO_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace lmzoo {

bool host_sync_checks_available() { return LMZOO_WITH_CUDA; }

HostSyncCheck::HostSyncCheck() {
#if LMZOO_WITH_CUDA
  previous_ = int(c10::cuda::warning_state().get_sync_debug_mode());
  c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
#endif
}

HostSyncCheck::~HostSyncCheck() {
#if LMZOO_WITH_CUDA
  c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode(previous_));
#endif
}

}  // namespace lmzoo
