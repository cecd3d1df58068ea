// Device selection (--device auto|cpu|cuda[:N]) and mixed-precision autocast scope.
#pragma once
#include <string>

#include <torch/torch.h>

#include "train/train_enums.h"

namespace lmzoo {

// auto: CUDA when torch::cuda::is_available(), else CPU. Throws a clear error for an unknown
// device or a CUDA device this machine does not have.
torch::Device resolve_device(const std::string& name);

// Sets LibTorch's intra-op threads and OpenBLAS's own thread pool to n (n <= 0: keep LibTorch's
// current count). OpenBLAS does not follow torch::set_num_threads; left alone it runs a second
// pool that spin-waits against ours (measured: ~10x slower steps when the other core is busy).
void configure_cpu_threads(int n);

// fp32 matmuls on CUDA may use TF32 tensor cores when tf32 (LibTorch's float32 matmul precision "high",
// else "highest"). No effect on a CPU.
void configure_device_math(const torch::Device& device, bool tf32);

// Enables autocast for the scope: bf16 (CPU and CUDA) or fp16 (CUDA; the trainer pairs it with a LossScaler);
// no-op for fp32.
class AutocastScope {
 public:
  AutocastScope(Precision precision, const torch::Device& device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool enabled_ = false;
  c10::DeviceType device_type_;
};

}  // namespace lmzoo
