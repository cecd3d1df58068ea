// The feed-forward's first product with bias + tanh GELU in cuBLASLt's epilogue, and its backward product with
// GELU's derivative and the bias gradient in the epilogue: a plain C++ interface (raw pointers, row-major
// matrices), so that nvcc compiles gelu_gemm_cuda.cu without LibTorch's headers. models/kernels/gelu_mlp.cpp
// calls it; it exists only in builds with a CUDA compiler (LMZOO_WITH_CUDA_KERNELS).
#pragma once
#include <cstddef>
#include <cstdint>

#include "models/kernels/cuda/element_type.h"

namespace lmzoo::cuda_kernels {

// Forward: pre = x weight^T (+ bias) and h = gelu_tanh(pre), both (rows, out). x: (rows, in), weight: (out, in),
// bias: (out) or null; every matrix row-major and contiguous, all of `type`. `out` must be a multiple of 8 (the
// leading dimension cuBLASLt takes for pre).
struct GeluGemmForward {
  ElementType type;
  bool tf32;  // fp32 products on TF32 tensor cores
  const void* x;
  const void* weight;
  const void* bias;
  int64_t rows, in, out;
  void* pre;
  void* h;
};

// Backward: dpre = (dh_source weight) * gelu_tanh'(pre), (rows, out), and, when bias_grad is not null, its
// column sums (out). dh_source: (rows, k), the gradient of the next product's output; weight: (k, out), that
// product's weight; pre: the forward's (rows, out).
struct GeluGemmBackward {
  ElementType type;
  bool tf32;
  const void* dh_source;
  const void* weight;
  const void* pre;
  int64_t rows, k, out;
  void* dpre;
  void* bias_grad;
};

// What a call did: ran, or found no cuBLASLt kernel for the shapes, types and alignments (its heuristic refused
// them or returned none; nothing written).
enum class GeluGemmStatus { kDone, kNoKernel };

// The workspace a call may use, in bytes: callers pass a device buffer at least this big.
constexpr size_t kGeluGemmWorkspaceBytes = size_t(32) << 20;

// Run on `stream` (a cudaStream_t) with `workspace`. Throws std::runtime_error naming cuBLASLt's status when a
// call fails for another reason. The kernel cuBLASLt picks is remembered per shape.
GeluGemmStatus gelu_gemm_forward(const GeluGemmForward& args, void* workspace, void* stream);
GeluGemmStatus gelu_gemm_backward(const GeluGemmBackward& args, void* workspace, void* stream);

}  // namespace lmzoo::cuda_kernels
