// cuBLASLt products with GELU epilogues. cuBLASLt is column-major: a row-major (r, c) matrix is its (c, r)
// transpose there, so a row-major C = A B is computed as C^T = B^T A^T with the operands swapped. Forward:
// GELU_AUX(_BIAS) writes h and, as its auxiliary output, pre; backward: DGELU(_BGRAD) multiplies the product by
// GELU's derivative at pre and sums the bias gradient. cuBLASLt's GELU is the tanh approximation.
#include "models/kernels/cuda/gelu_gemm_cuda.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>

namespace lmzoo::cuda_kernels {

namespace {

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cuBLASLt ") + what + ": " + cublasLtGetStatusName(status));
  }
}

cudaDataType_t data_type(ElementType type) {
  switch (type) {
    case ElementType::kFloat: return CUDA_R_32F;
    case ElementType::kBFloat16: return CUDA_R_16BF;
    case ElementType::kHalf: return CUDA_R_16F;
  }
  throw std::logic_error("GELU GEMM: element type outside its table");
}

// One cuBLASLt handle per device, created on first use and kept for the process.
cublasLtHandle_t handle_for_current_device() {
  static std::mutex mutex;
  static std::map<int, cublasLtHandle_t> handles;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) throw std::runtime_error("GELU GEMM: no current CUDA device");
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = handles.find(device);
  if (found != handles.end()) return found->second;
  cublasLtHandle_t handle = nullptr;
  check(cublasLtCreate(&handle), "create");
  handles.emplace(device, handle);
  return handle;
}

// The largest power of two up to 256 that divides the address: what cuBLASLt may assume of the pointer.
uint32_t alignment_of(const void* pointer) {
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

// Owners of cuBLASLt's descriptors.
struct MatmulDesc {
  cublasLtMatmulDesc_t desc = nullptr;
  explicit MatmulDesc(cublasComputeType_t compute) {
    check(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F), "matmul desc");
  }
  ~MatmulDesc() { cublasLtMatmulDescDestroy(desc); }
  template <typename T>
  void set(cublasLtMatmulDescAttributes_t attribute, const T& value) {
    check(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)), "matmul desc attribute");
  }
};

struct Layout {
  cublasLtMatrixLayout_t layout = nullptr;
  Layout(cudaDataType_t type, int64_t rows, int64_t columns, int64_t ld) {
    check(cublasLtMatrixLayoutCreate(&layout, type, uint64_t(rows), uint64_t(columns), ld), "matrix layout");
  }
  ~Layout() { cublasLtMatrixLayoutDestroy(layout); }
};

struct Preference {
  cublasLtMatmulPreference_t preference = nullptr;
  Preference() { check(cublasLtMatmulPreferenceCreate(&preference), "preference"); }
  ~Preference() { cublasLtMatmulPreferenceDestroy(preference); }
  template <typename T>
  void set(cublasLtMatmulPreferenceAttributes_t attribute, const T& value) {
    check(cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof(value)), "preference attribute");
  }
};

// One column-major product D (m, n) = op(A) op(B) with an epilogue: A is (k, m) stored when trans_a (else (m, k)),
// B is (k, n), all of one type; aux (m, n) with leading dimension m; bias (m) or null.
struct Product {
  ElementType type;
  bool tf32;
  cublasLtEpilogue_t epilogue;
  bool trans_a;
  int64_t m, n, k;
  const void* a;
  int64_t lda;
  const void* b;
  int64_t ldb;
  void* d;
  const void* aux;
  const void* bias;
};

// What the chosen kernel depends on: the key of the per-shape memory.
using ProductKey = std::tuple<int, int, bool, int, bool, int64_t, int64_t, int64_t, uint32_t, uint32_t, uint32_t,
                              uint32_t, uint32_t>;

GeluGemmStatus run_product(const Product& p, void* workspace, void* stream) {
  const cublasComputeType_t compute =
      p.type == ElementType::kFloat && p.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cudaDataType_t type = data_type(p.type);
  MatmulDesc desc(compute);
  const cublasOperation_t op_a = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = CUBLAS_OP_N;
  desc.set(CUBLASLT_MATMUL_DESC_TRANSA, op_a);
  desc.set(CUBLASLT_MATMUL_DESC_TRANSB, op_b);
  desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE, p.epilogue);
  desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, p.aux);
  desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, p.m);
  if (p.bias != nullptr) desc.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, p.bias);
  const Layout a_layout(type, p.trans_a ? p.k : p.m, p.trans_a ? p.m : p.k, p.lda);
  const Layout b_layout(type, p.k, p.n, p.ldb);
  const Layout d_layout(type, p.m, p.n, p.m);

  const int device = [] {
    int d = 0;
    cudaGetDevice(&d);
    return d;
  }();
  const ProductKey key{device,         int(p.type),          p.tf32,
                       int(p.epilogue), p.trans_a,           p.m,
                       p.n,            p.k,                  alignment_of(p.a),
                       alignment_of(p.b), alignment_of(p.d), alignment_of(p.aux),
                       p.bias == nullptr ? 0u : alignment_of(p.bias)};
  static std::mutex mutex;
  static std::map<ProductKey, std::pair<bool, cublasLtMatmulAlgo_t>> chosen;  // {found, kernel} per key
  cublasLtHandle_t handle = handle_for_current_device();
  std::pair<bool, cublasLtMatmulAlgo_t> choice{false, {}};
  {
    const std::lock_guard<std::mutex> lock(mutex);
    auto found = chosen.find(key);
    if (found != chosen.end()) {
      choice = found->second;
    } else {
      Preference preference;
      preference.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t(kGeluGemmWorkspaceBytes));
      preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment_of(p.a));
      preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment_of(p.b));
      preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment_of(p.d));
      preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment_of(p.d));
      cublasLtMatmulHeuristicResult_t result{};
      int count = 0;
      const cublasStatus_t status =
          cublasLtMatmulAlgoGetHeuristic(handle, desc.desc, a_layout.layout, b_layout.layout, d_layout.layout,
                                         d_layout.layout, preference.preference, 1, &result, &count);
      // A refused configuration (NOT_SUPPORTED, or INVALID_VALUE for a layout the epilogue does not take) or no
      // result: no kernel, and the caller takes the plain ops.
      choice = {status == CUBLAS_STATUS_SUCCESS && count > 0 && result.state == CUBLAS_STATUS_SUCCESS, result.algo};
      chosen.emplace(key, choice);
    }
  }
  if (!choice.first) return GeluGemmStatus::kNoKernel;
  const float alpha = 1.0f, beta = 0.0f;
  check(cublasLtMatmul(handle, desc.desc, &alpha, p.a, a_layout.layout, p.b, b_layout.layout, &beta, p.d,
                       d_layout.layout, p.d, d_layout.layout, &choice.second, workspace, kGeluGemmWorkspaceBytes,
                       static_cast<cudaStream_t>(stream)),
        "matmul");
  return GeluGemmStatus::kDone;
}

}  // namespace

GeluGemmStatus gelu_gemm_forward(const GeluGemmForward& args, void* workspace, void* stream) {
  // Row-major pre (rows, out) = x weight^T is column-major pre^T (out, rows) = weight (stored (in, out),
  // transposed) times x^T (stored (in, rows)).
  Product p{args.type, args.tf32,
            args.bias != nullptr ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX,
            /*trans_a=*/true, args.out, args.rows, args.in, args.weight, args.in, args.x, args.in, args.h,
            args.pre, args.bias};
  return run_product(p, workspace, stream);
}

GeluGemmStatus gelu_gemm_backward(const GeluGemmBackward& args, void* workspace, void* stream) {
  // Row-major dh (rows, out) = dh_source (rows, k) weight (k, out) is column-major dh^T (out, rows) = weight
  // (stored (out, k)) times dh_source^T (stored (k, rows)).
  Product p{args.type, args.tf32,
            args.bias_grad != nullptr ? CUBLASLT_EPILOGUE_DGELU_BGRAD : CUBLASLT_EPILOGUE_DGELU,
            /*trans_a=*/false, args.out, args.rows, args.k, args.weight, args.out, args.dh_source, args.k,
            args.dpre, args.pre, args.bias_grad};
  return run_product(p, workspace, stream);
}

}  // namespace lmzoo::cuda_kernels
