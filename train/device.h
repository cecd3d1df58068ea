// Device selection (--device auto|cpu|cuda[:N]) and mixed-precision autocast scope.
#pragma once
#include <string>

#include <torch/torch.h>

namespace lmzoo {

// auto: CUDA when torch::cuda::is_available(), else CPU. Throws a clear error for an unknown
// device or a CUDA device this machine does not have.
torch::Device resolve_device(const std::string& name);

// Enables bf16 autocast for the scope when precision == "bf16" (CPU and CUDA); no-op for fp32.
class AutocastScope {
 public:
  AutocastScope(const std::string& precision, const torch::Device& device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool enabled_ = false;
  bool cuda_ = false;
};

}  // namespace lmzoo
