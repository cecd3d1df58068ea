// The one place for code that differs between LibTorch releases (1.13 on Debian 12, 2.6 on Debian 13,
// pip torch 2.x with CUDA): autocast switches, the optimizer-state key, and which fused ops exist.
#pragma once
#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <sstream>
#include <string>
#include <type_traits>

// 2.x: at::scaled_dot_product_attention (flash / memory-efficient kernels on CUDA, flash on CPU).
#define LMZOO_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))
#define LMZOO_HAS_SDPA LMZOO_TORCH_AT_LEAST(2, 1)
// at::_fused_adamw_ with a grad_scale tensor (CUDA since 2.0; CPU since 2.4).
#define LMZOO_HAS_FUSED_ADAMW LMZOO_TORCH_AT_LEAST(2, 1)
// at::_fused_adamw_ with the learning rate as a device tensor (.tensor_lr), which a CUDA graph can replay with a
// new value each step.
#define LMZOO_HAS_TENSOR_LR_ADAMW LMZOO_TORCH_AT_LEAST(2, 2)

namespace lmzoo::compat {

// Turns autocast on or off for one device type, with the given lower-precision dtype when on.
inline void set_autocast(c10::DeviceType device_type, bool enabled, at::ScalarType dtype = at::kBFloat16) {
#if LMZOO_TORCH_AT_LEAST(2, 4)
  if (enabled) at::autocast::set_autocast_dtype(device_type, dtype);
  at::autocast::set_autocast_enabled(device_type, enabled);
#else
  if (device_type == c10::DeviceType::CUDA) {
    if (enabled) at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(enabled);
  } else {
    if (enabled) at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

inline bool is_autocast_enabled(c10::DeviceType device_type) {
#if LMZOO_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(device_type);
#else
  return device_type == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

// The lower-precision dtype autocast uses on one device type (whether or not it is on).
inline at::ScalarType autocast_dtype(c10::DeviceType device_type) {
#if LMZOO_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(device_type);
#else
  return device_type == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                              : at::autocast::get_autocast_cpu_dtype();
#endif
}

// A parameter's key in torch::optim::Optimizer::state(): its TensorImpl address, printed as a string in
// LibTorch 1.x (as c10::guts::to_string did) and as the pointer itself in 2.x.
template <typename Key>
Key optimizer_state_key(const torch::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream out;
    out << static_cast<const void*>(p.unsafeGetTensorImpl());
    return out.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

}  // namespace lmzoo::compat
