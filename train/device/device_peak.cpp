// GEMM timing with a device synchronise around each batch of matmuls; CUDA memory statistics from c10's caching
// allocator when LibTorch has CUDA (LMZOO_WITH_CUDA from the generated build config); the host's from getrusage;
// a device's capacity from CUDA's device properties or sysconf; CPU tensors' bytes from a counting wrapper of c10's
// CPU allocator.
#include "train/device/device_peak.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <vector>

#include <c10/core/CPUAllocator.h>

#include "lmzoo_build_config.h"
#include "models/kernels/linear_kernel.h"
#if LMZOO_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif
#include "models/memory_estimate.h"

namespace lmzoo {

namespace {

// Forgets the allocator's peaks on DEVICE, so that the GEMM's own buffers do not count as the run's peak.
void reset_peak_device_memory(const torch::Device& device) {
#if LMZOO_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.has_index() ? device.index() : 0);
#else
  (void)device;
#endif
}

class CountingCpuAllocator;
CountingCpuAllocator* g_cpu_counter = nullptr;  // set once by count_cpu_tensor_bytes, never freed

// c10's CPU allocator with a count of the bytes its allocations hold now and at most. Each block carries its size in
// a header before the data, so that a DataPtr's context is its data: LibTorch's raw_allocate (which 2.x's CPU
// kernels call) asserts that, and its raw_deallocate frees through raw_deleter().
class CountingCpuAllocator final : public at::Allocator {
 public:
  explicit CountingCpuAllocator(at::Allocator* base) : base_(base) {}
  int64_t peak() const { return peak_.load(); }
  int64_t live() const { return live_.load(); }

  // LibTorch 1.13 declares allocate const, 2.x not: one of the two overrides it.
  at::DataPtr allocate(size_t n) const { return counted(n); }
  at::DataPtr allocate(size_t n) { return counted(n); }
  at::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }

 private:
  static constexpr size_t kHeader = 64;  // the size, padded to c10's 64-byte alignment
  at::DataPtr counted(size_t n) const {
    auto* block = static_cast<char*>(base_->raw_allocate(n + kHeader));
    std::memcpy(block, &n, sizeof n);
    const int64_t now = live_.fetch_add(int64_t(n)) + int64_t(n);
    int64_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    void* data = block + kHeader;
    return at::DataPtr(data, data, &release, at::Device(at::kCPU));
  }
  static void release(void* data) {
    if (data == nullptr) return;
    char* block = static_cast<char*>(data) - kHeader;
    size_t n = 0;
    std::memcpy(&n, block, sizeof n);
    g_cpu_counter->live_.fetch_sub(int64_t(n));
    g_cpu_counter->base_->raw_deallocate(block);
  }
  at::Allocator* base_;
  mutable std::atomic<int64_t> live_{0};
  mutable std::atomic<int64_t> peak_{0};
};

}  // namespace

void count_cpu_tensor_bytes() {
  if (g_cpu_counter) return;
  g_cpu_counter = new CountingCpuAllocator(c10::GetCPUAllocator());
  c10::SetCPUAllocator(g_cpu_counter);
}

int64_t live_cpu_tensor_bytes() { return g_cpu_counter ? g_cpu_counter->live() : 0; }

double measure_peak_flops(const torch::Device& device, Precision precision) {
  std::vector<double> rates = time_gemms(device, precision);
  reset_peak_device_memory(device);
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

std::vector<double> time_gemms(const torch::Device& device, Precision precision) {
  torch::NoGradGuard no_grad;
  const bool cuda = device.is_cuda();
  const int64_t n = cuda ? 8192 : 512;
  const int per_batch = cuda ? 5 : 1, batches = cuda ? 5 : 10;
  const auto dtype = precision == Precision::kBf16 ? torch::kBFloat16 : precision == Precision::kFp16 ? torch::kHalf : torch::kFloat;
  auto options = torch::TensorOptions().dtype(dtype).device(device);
  // Values from linspace, not the RNG: timing a GEMM must not move a seeded run's random stream.
  auto a = torch::linspace(-1.0, 1.0, n * n, options).view({n, n});  // (n, n)
  auto b = a.t().contiguous();                                        // (n, n)
  auto sync = [&] {
    if (cuda) torch::cuda::synchronize(device.index());
  };
  // The fastest GEMM the run itself can use: on a CPU in fp32 that is oneDNN's (fast_linear, which the linear
  // layers run on) when it beats LibTorch's matmul (OpenBLAS), as it does with AVX-512.
  const bool try_fast_linear = !cuda && fast_linear_supported(a, b);
  auto time_batch = [&](bool use_fast_linear) {
    sync();
    const auto start = std::chrono::steady_clock::now();
    for (int j = 0; j < per_batch; ++j) auto c = use_fast_linear ? fast_linear(a, b) : torch::matmul(a, b);
    sync();
    return 2.0 * double(n) * n * n * per_batch /
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<double> rates;
  for (int i = 0; i < batches + 2; ++i) {  // two warm-up batches
    double rate = time_batch(false);
    if (try_fast_linear) rate = std::max(rate, time_batch(true));
    if (i >= 2) rates.push_back(rate);
  }
  return rates;
}

int64_t peak_device_memory_bytes(const torch::Device& device) {
  if (device.is_cpu()) return g_cpu_counter ? g_cpu_counter->peak() : 0;
#if LMZOO_WITH_CUDA
  if (!device.is_cuda()) return 0;
  const auto index = device.has_index() ? device.index() : 0;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
  return stats.allocated_bytes[0].peak;  // [0]: StatType::AGGREGATE (its namespace moved in 2.x)
#else
  (void)device;
  return 0;
#endif
}

double device_memory_capacity_bytes(const torch::Device& device) {
#if LMZOO_WITH_CUDA
  if (device.is_cuda()) return double(at::cuda::getDeviceProperties(device.has_index() ? device.index() : 0)->totalGlobalMem);
#endif
  (void)device;
  return host_memory_bytes();
}

int64_t peak_host_memory_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return int64_t(usage.ru_maxrss) * 1024;  // Linux reports kilobytes
}

}  // namespace lmzoo
