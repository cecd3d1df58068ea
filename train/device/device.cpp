// Device selection and bf16 / fp16 autocast (ATen's autocast state, as torch.autocast sets it).
#include "train/device/device.h"

#include "models/torch_compat.h"

#include <stdexcept>

// Exported by libopenblas, which LibTorch loads; weak so that other BLAS builds still link.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));
// oneDNN's ISA in effect (dnnl.h; the CPU's, capped by DNNL_MAX_CPU_ISA), weak as above.
extern "C" int dnnl_get_effective_cpu_isa() __attribute__((weak));

namespace lmzoo {

namespace {

// dnnl_cpu_isa_avx512_core (oneDNN 2.x and 3.x): the bits every AVX-512 ISA value of oneDNN carries.
constexpr int kOneDnnAvx512Core = 0x27;

// LibTorch sends bf16 matmuls to oneDNN when cpuinfo finds AVX-512 on the CPU, without asking oneDNN: where
// DNNL_MAX_CPU_ISA caps oneDNN below AVX-512 (as when an AVX2-only machine is emulated), oneDNN has no kernel and
// every bf16 step fails with "could not create a primitive descriptor iterator". There LibTorch's oneDNN paths are
// turned off, so that it takes its own kernels, as it does on a CPU without AVX-512. Run once per process, when
// the library loads.
const bool kOneDnnChecked = [] {
  if (dnnl_get_effective_cpu_isa && (dnnl_get_effective_cpu_isa() & kOneDnnAvx512Core) != kOneDnnAvx512Core) {
    at::globalContext().setUserEnabledMkldnn(false);
  }
  return true;
}();

}  // namespace

void configure_cpu_threads(int n) {
  if (n > 0) torch::set_num_threads(n);
  if (openblas_set_num_threads) openblas_set_num_threads(torch::get_num_threads());
}

torch::Device resolve_device(const std::string& name) {
  if (name == "auto") return torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (name.rfind("cuda", 0) == 0) {
    if (!torch::cuda::is_available()) {
      throw std::runtime_error("--device " + name + ": CUDA is not available on this machine (use --device cpu)");
    }
    torch::Device device(torch::kCUDA, 0);
    try {
      device = torch::Device(name);
    } catch (const c10::Error&) {
      throw std::invalid_argument("--device '" + name + "' is not auto, cpu, cuda or cuda:N");
    }
    if (device.index() >= static_cast<int>(torch::cuda::device_count())) {
      throw std::runtime_error("--device " + name + ": this machine has " +
                               std::to_string(torch::cuda::device_count()) + " CUDA device(s)");
    }
    return device;
  }
  throw std::invalid_argument("--device '" + name + "' is not auto, cpu, cuda or cuda:N");
}

void configure_device_math(const torch::Device& device, bool tf32) {
  // "high" lets fp32 matmuls run on TF32 tensor cores (CUDA, compute capability >= 8.0); CPUs ignore it.
  if (device.is_cuda()) at::globalContext().setFloat32MatmulPrecision(tf32 ? "high" : "highest");
}

AutocastScope::AutocastScope(Precision precision, const torch::Device& device)
    : enabled_(precision != Precision::kFp32), device_type_(device.type()) {
  if (enabled_) compat::set_autocast(device_type_, true, precision == Precision::kFp16 ? at::kHalf : at::kBFloat16);
}

AutocastScope::~AutocastScope() {
  if (!enabled_) return;
  compat::set_autocast(device_type_, false);
  at::autocast::clear_cache();
}

}  // namespace lmzoo
