// fast_linear: forward (x W^T) and input gradient (dy W) through oneDNN's sgemm, which is 5-15% faster than
// OpenBLAS at transformer shapes on AVX2 CPUs; the weight gradient (dy^T x) stays with torch::mm (OpenBLAS),
// which is as fast for that transpose. Shapes: M rows (all leading dims), K in features, N out features.
#include "models/kernels/linear_kernel.h"

#include "models/kernels/cpu_features.h"
#include "models/kernels/low_precision_linear.h"
#include "models/torch_compat.h"

#include <cstdlib>

// oneDNN's row-major sgemm (dnnl.h), weak so that LibTorch builds without a shared libdnnl still link and run.
extern "C" int dnnl_sgemm(char transa, char transb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc)
    __attribute__((weak));

namespace lmzoo {

namespace {

// C (M, N) = A (M, K) op(B), op(B) = B^T for B (N, K) when trans_b, else B (K, N). All row-major contiguous.
void sgemm(const torch::Tensor& a, const torch::Tensor& b, bool trans_b, torch::Tensor c) {
  const int64_t M = a.size(0), K = a.size(1), N = c.size(1);
  const int status = dnnl_sgemm('N', trans_b ? 'T' : 'N', M, N, K, 1.0f, a.data_ptr<float>(), K,
                                b.data_ptr<float>(), trans_b ? K : N, 0.0f, c.data_ptr<float>(), N);
  if (status != 0) torch::mm_out(c, a, trans_b ? b.t() : b);  // dnnl_success is 0
}

struct FastLinearFunction : torch::autograd::Function<FastLinearFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight) {
    const int64_t K = x.size(-1), N = weight.size(0);
    auto x2 = x.reshape({-1, K}).contiguous();  // (M, K)
    auto w = weight.contiguous();               // (N, K)
    auto out_sizes = x.sizes().vec();
    out_sizes.back() = N;
    // Allocated in its final shape, not returned as a view, so that callers may add to it in place.
    auto y = torch::empty(out_sizes, x.options());  // (..., N)
    sgemm(x2, w, /*trans_b=*/true, y.view({x2.size(0), N}));  // (M, N)
    // A frozen weight (LoRA's base) needs no dW, so the input is not kept for it.
    ctx->save_for_backward({weight.requires_grad() ? x2 : torch::Tensor(), w});
    ctx->saved_data["x_sizes"] = x.sizes().vec();
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x2 = saved[0];
    const auto& w = saved[1];
    auto dy = grads[0].reshape({-1, w.size(0)}).contiguous();  // (M, N)
    torch::Tensor dx, dw;
    if (ctx->needs_input_grad(0)) {
      dx = torch::empty(ctx->saved_data["x_sizes"].toIntVector(), dy.options());  // (..., K)
      sgemm(dy, w, /*trans_b=*/false, dx.view({dy.size(0), w.size(1)}));         // (M, K) = dy W
    }
    if (ctx->needs_input_grad(1)) dw = torch::mm(dy.t(), x2);  // (N, K)
    return {dx, dw};
  }
};

}  // namespace

bool fast_linear_supported(const torch::Tensor& x, const torch::Tensor& weight) {
  // Under CPU autocast torch::linear runs in bf16: leave it to the library.
  return !kernels::switched_off() && dnnl_sgemm != nullptr && !compat::is_autocast_enabled(c10::DeviceType::CPU) && x.device().is_cpu() &&
         weight.device().is_cpu() &&
         x.scalar_type() == torch::kFloat && weight.scalar_type() == torch::kFloat && weight.dim() == 2 &&
         x.dim() >= 1 && x.numel() > 0;
}

torch::Tensor fast_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (weight.scalar_type() != x.scalar_type() && !compat::is_autocast_enabled(x.device().type())) {
    return low_precision_linear(x, weight, bias);  // a frozen base stored in bf16 (int8 goes through apply_linear)
  }
  if (!fast_linear_supported(x, weight) || (bias.defined() && bias.scalar_type() != torch::kFloat)) {
    return torch::linear(x, weight, bias);
  }
  // (An undefined tensor cannot be a custom Function's input in LibTorch 1.13: the bias is added outside.)
  auto y = FastLinearFunction::apply(x, weight);
  return bias.defined() ? y + bias : y;
}

}  // namespace lmzoo
