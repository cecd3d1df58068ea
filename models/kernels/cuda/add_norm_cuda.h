// Residual add + LayerNorm / RMSNorm as lmzoo's own CUDA kernels: a plain C++ interface (raw pointers, no
// LibTorch types), so that nvcc compiles add_norm_cuda.cu without LibTorch's headers. models/kernels/add_norm.cpp
// calls it; it exists only in builds with a CUDA compiler (LMZOO_WITH_CUDA_KERNELS).
#pragma once
#include <cstdint>

#include "models/kernels/cuda/element_type.h"

namespace lmzoo::cuda_kernels {

// The widest row the backward kernel takes: its per-block weight-gradient sums (2 x columns floats) and its
// 128-byte reduction scratch fit the 48 KiB of shared memory a block gets without opting in to more.
constexpr int64_t kAddNormMaxColumns = 6016;

// What the forward kernel reads and writes. x, h and sum have x_type (h: h_type), gamma, beta and y have
// weight_type; mean and rstd are fp32, one per row (mean unused for RMSNorm). beta may be null. All rows
// contiguous, `columns` elements each.
struct AddNormForward {
  ElementType x_type, h_type, weight_type;
  const void* x;
  const void* h;
  const void* gamma;
  const void* beta;
  int64_t rows, columns;
  float eps;
  bool rms;
  void* sum;
  void* y;
  float* mean;
  float* rstd;
};

// What the backward kernel reads and writes: dy (weight_type) and, when not null, dsum (x_type), the gradient
// the residual stream brings to sum; dx (x_type) = dsum + the norm's input gradient; per block b of `blocks`
// (add_norm_backward_blocks), its rows' sums of dy * xhat and of dy in dgamma_partial[b * columns + j] and
// dbeta_partial[b * columns + j].
struct AddNormBackward {
  ElementType x_type, weight_type;
  const void* dy;
  const void* dsum;
  const void* sum;
  const void* gamma;
  const float* mean;
  const float* rstd;
  int64_t rows, columns, blocks;
  bool rms;
  void* dx;
  float* dgamma_partial;
  float* dbeta_partial;
};

// Launch on `stream` (a cudaStream_t). Return null, or the CUDA error's text.
const char* add_norm_forward(const AddNormForward& args, void* stream);
const char* add_norm_backward(const AddNormBackward& args, void* stream);

// How many blocks add_norm_backward uses for `rows` rows on the current device: the rows of dgamma_partial.
int64_t add_norm_backward_blocks(int64_t rows);

}  // namespace lmzoo::cuda_kernels
