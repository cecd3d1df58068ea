// Residual add + LayerNorm / RMSNorm kernels. Forward: one block per row; sum = x + h is rounded to x's type and
// stored, then normalised in fp32 (two passes: mean, then the centred variance) and y rounded to the weights'
// type. Backward: blocks take rows in turn; per row dx = dsum + rstd * (g - mean(g) - xhat * mean(g * xhat))
// with g = dy * gamma (RMSNorm: without the mean(g) term), and each block sums dy * xhat and dy per column in
// shared memory. Every sum is taken in a fixed order, so results repeat bit for bit.
#include "models/kernels/cuda/add_norm_cuda.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace lmzoo::cuda_kernels {

namespace {

constexpr int kMaxThreads = 256;

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half(v); }

// The sum of v over the block, the same value in every thread (blockDim.x a multiple of 32; scratch: 32 floats).
__device__ float block_sum(float v, float* scratch) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  __syncthreads();  // the previous call's readers are done with scratch
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < int(blockDim.x / 32); ++w) total += scratch[w];
  return total;
}

template <typename TX, typename TH, typename TW>
__global__ void add_norm_forward_kernel(const TX* __restrict__ x, const TH* __restrict__ h,
                                        const TW* __restrict__ gamma, const TW* __restrict__ beta, int64_t columns,
                                        float eps, bool rms, TX* __restrict__ sum, TW* __restrict__ y,
                                        float* __restrict__ mean_out, float* __restrict__ rstd_out) {
  __shared__ float scratch[32];
  const int64_t offset = int64_t(blockIdx.x) * columns;
  const float inv_columns = 1.0f / float(columns);
  // Pass 1: the residual sum, stored in x's type; the norm reads it back as stored (each thread its own columns).
  float total = 0.0f;
  for (int64_t j = threadIdx.x; j < columns; j += blockDim.x) {
    const TX s = from_float<TX>(to_float(x[offset + j]) + to_float(h[offset + j]));
    sum[offset + j] = s;
    const float v = to_float(from_float<TW>(to_float(s)));  // the norm's input in the weights' type
    total += rms ? v * v : v;
  }
  total = block_sum(total, scratch);
  float mean = 0.0f, rstd;
  if (rms) {
    rstd = rsqrtf(total * inv_columns + eps);
  } else {
    mean = total * inv_columns;
    float squares = 0.0f;
    for (int64_t j = threadIdx.x; j < columns; j += blockDim.x) {
      const float d = to_float(from_float<TW>(to_float(sum[offset + j]))) - mean;
      squares += d * d;
    }
    rstd = rsqrtf(block_sum(squares, scratch) * inv_columns + eps);
  }
  for (int64_t j = threadIdx.x; j < columns; j += blockDim.x) {
    const float xhat = (to_float(from_float<TW>(to_float(sum[offset + j]))) - mean) * rstd;
    float out = xhat * to_float(gamma[j]);
    if (beta != nullptr) out += to_float(beta[j]);
    y[offset + j] = from_float<TW>(out);
  }
  if (threadIdx.x == 0) {
    mean_out[blockIdx.x] = mean;
    rstd_out[blockIdx.x] = rstd;
  }
}

template <typename TX, typename TW>
__global__ void add_norm_backward_kernel(const TW* __restrict__ dy, const TX* __restrict__ dsum,
                                         const TX* __restrict__ sum, const TW* __restrict__ gamma,
                                         const float* __restrict__ mean, const float* __restrict__ rstd,
                                         int64_t rows, int64_t columns, bool rms, TX* __restrict__ dx,
                                         float* __restrict__ dgamma_partial, float* __restrict__ dbeta_partial) {
  extern __shared__ float column_sums[];  // [0, columns): sum of dy * xhat; [columns, 2 columns): sum of dy
  __shared__ float scratch[32];
  for (int64_t j = threadIdx.x; j < columns; j += blockDim.x) {
    column_sums[j] = 0.0f;
    column_sums[columns + j] = 0.0f;
  }
  const float inv_columns = 1.0f / float(columns);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t offset = row * columns;
    const float m = rms ? 0.0f : mean[row], a = rstd[row];
    float g_total = 0.0f, gx_total = 0.0f;
    for (int64_t j = threadIdx.x; j < columns; j += blockDim.x) {
      const float xhat = (to_float(from_float<TW>(to_float(sum[offset + j]))) - m) * a;
      const float g = to_float(dy[offset + j]) * to_float(gamma[j]);
      g_total += g;
      gx_total += g * xhat;
    }
    const float g_mean = rms ? 0.0f : block_sum(g_total, scratch) * inv_columns;
    const float gx_mean = block_sum(gx_total, scratch) * inv_columns;
    for (int64_t j = threadIdx.x; j < columns; j += blockDim.x) {
      const float xhat = (to_float(from_float<TW>(to_float(sum[offset + j]))) - m) * a;
      const float d = to_float(dy[offset + j]);
      float grad = a * (d * to_float(gamma[j]) - g_mean - xhat * gx_mean);
      if (dsum != nullptr) grad += to_float(dsum[offset + j]);
      dx[offset + j] = from_float<TX>(grad);
      column_sums[j] += d * xhat;
      column_sums[columns + j] += d;
    }
  }
  for (int64_t j = threadIdx.x; j < columns; j += blockDim.x) {
    dgamma_partial[int64_t(blockIdx.x) * columns + j] = column_sums[j];
    dbeta_partial[int64_t(blockIdx.x) * columns + j] = column_sums[columns + j];
  }
}

// Calls f with a value of the C++ type that `type` names.
template <typename F>
void with_type(ElementType type, F&& f) {
  switch (type) {
    case ElementType::kFloat: f(float{}); return;
    case ElementType::kBFloat16: f(__nv_bfloat16{}); return;
    case ElementType::kHalf: f(__half{}); return;
  }
}

int threads_for(int64_t columns) {
  const int64_t warps = (columns + 31) / 32;
  return int(warps * 32 < kMaxThreads ? warps * 32 : kMaxThreads);
}

const char* launch_error() {
  const cudaError_t error = cudaGetLastError();
  return error == cudaSuccess ? nullptr : cudaGetErrorString(error);
}

}  // namespace

const char* add_norm_forward(const AddNormForward& a, void* stream) {
  if (a.rows == 0) return nullptr;
  with_type(a.x_type, [&](auto x_tag) {
    with_type(a.h_type, [&](auto h_tag) {
      with_type(a.weight_type, [&](auto w_tag) {
        using TX = decltype(x_tag);
        using TH = decltype(h_tag);
        using TW = decltype(w_tag);
        add_norm_forward_kernel<TX, TH, TW><<<unsigned(a.rows), threads_for(a.columns), 0, cudaStream_t(stream)>>>(
            static_cast<const TX*>(a.x), static_cast<const TH*>(a.h), static_cast<const TW*>(a.gamma),
            static_cast<const TW*>(a.beta), a.columns, a.eps, a.rms, static_cast<TX*>(a.sum), static_cast<TW*>(a.y),
            a.mean, a.rstd);
      });
    });
  });
  return launch_error();
}

int64_t add_norm_backward_blocks(int64_t rows) {
  int device = 0, processors = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&processors, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    processors = 32;
  }
  const int64_t blocks = 2 * int64_t(processors);  // a few rows each: the partial sums stay small
  return rows < blocks ? (rows > 0 ? rows : 1) : blocks;
}

const char* add_norm_backward(const AddNormBackward& a, void* stream) {
  if (a.rows == 0) return nullptr;
  const size_t shared_bytes = size_t(2 * a.columns) * sizeof(float);
  with_type(a.x_type, [&](auto x_tag) {
    with_type(a.weight_type, [&](auto w_tag) {
      using TX = decltype(x_tag);
      using TW = decltype(w_tag);
      add_norm_backward_kernel<TX, TW><<<unsigned(a.blocks), threads_for(a.columns), shared_bytes, cudaStream_t(stream)>>>(
          static_cast<const TW*>(a.dy), static_cast<const TX*>(a.dsum), static_cast<const TX*>(a.sum),
          static_cast<const TW*>(a.gamma), a.mean, a.rstd, a.rows, a.columns, a.rms, static_cast<TX*>(a.dx),
          a.dgamma_partial, a.dbeta_partial);
    });
  });
  return launch_error();
}

}  // namespace lmzoo::cuda_kernels
