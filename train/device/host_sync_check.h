// A scope in which any CUDA call that makes the host wait for the GPU (a synchronize, a copy to the host, a
// value read with item()) throws instead: LibTorch's sync debug mode set to "error" (as Python's
// torch.cuda.set_sync_debug_mode("error")). Tests assert with it that a training step never waits.
#pragma once

namespace lmzoo {

// Whether this LibTorch can check (it was built with CUDA).
bool host_sync_checks_available();

class HostSyncCheck {
 public:
  HostSyncCheck();   // no effect without CUDA
  ~HostSyncCheck();  // the previous mode back
  HostSyncCheck(const HostSyncCheck&) = delete;
  HostSyncCheck& operator=(const HostSyncCheck&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace lmzoo
