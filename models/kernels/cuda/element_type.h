// The element types lmzoo's CUDA kernels read and write, named without LibTorch's or CUDA's headers.
#pragma once

namespace lmzoo::cuda_kernels {

// Their arithmetic is fp32 whatever the storage.
enum class ElementType { kFloat, kBFloat16, kHalf };

}  // namespace lmzoo::cuda_kernels
