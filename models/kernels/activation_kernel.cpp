// Fused exact GELU: forward writes gelu(x) and gelu'(x) in one pass (ATen's formulas: x/2 (1 + erf(x/sqrt2)) and
// cdf + x pdf), backward multiplies the incoming gradient by the stored derivative.
#include "models/kernels/activation_kernel.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/graph_task.h>

#include <cmath>
#include <cstring>

#include "models/kernels/cpu_features.h"
#include "models/kernels/simd_math.h"

namespace lmzoo {

namespace {

#ifdef LMZOO_HAVE_X86
// y = gelu(x) and, when d is given, d = gelu'(x), for 8 lanes. With u = x / sqrt2, erf(u) and the normal pdf
// share one exponential: exp(-u^2) = exp(-x^2 / 2).
LMZOO_AVX2 inline void gelu8(const float* x, float* y, float* d) {
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  const __m256 xv = _mm256_loadu_ps(x);
  const __m256 u = _mm256_mul_ps(xv, _mm256_set1_ps(float(M_SQRT1_2)));
  const __m256 e = simd::exp8(_mm256_mul_ps(_mm256_mul_ps(xv, xv), _mm256_set1_ps(-0.5f)));
  const __m256 erf_term = _mm256_add_ps(one, simd::erf8_given_exp(u, e));
  _mm256_storeu_ps(y, _mm256_mul_ps(_mm256_mul_ps(xv, half), erf_term));
  if (d) {
    const __m256 cdf = _mm256_mul_ps(half, erf_term);
    const __m256 pdf = _mm256_mul_ps(_mm256_set1_ps(float(M_2_SQRTPI * M_SQRT1_2 * 0.5)), e);
    _mm256_storeu_ps(d, _mm256_fmadd_ps(xv, pdf, cdf));
  }
}

LMZOO_AVX2 void gelu_range(const float* x, float* y, float* d, int64_t begin, int64_t end) {
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) gelu8(x + i, y + i, d ? d + i : nullptr);
  if (i < end) {  // the tail through the same vector code, padded
    float xs[8] = {0}, ys[8], ds[8];
    std::memcpy(xs, x + i, sizeof(float) * (end - i));
    gelu8(xs, ys, d ? ds : nullptr);
    std::memcpy(y + i, ys, sizeof(float) * (end - i));
    if (d) std::memcpy(d + i, ds, sizeof(float) * (end - i));
  }
}
#endif

bool supported(const torch::Tensor& x) {
  return kernels::avx2_enabled() && x.device().is_cpu() && x.scalar_type() == torch::kFloat;
}

// Returns gelu(x) and, when with_derivative, gelu'(x); x must be supported().
std::pair<torch::Tensor, torch::Tensor> gelu_forward(const torch::Tensor& x_in, bool with_derivative) {
  const auto x = x_in.contiguous();
  auto y = torch::empty_like(x);
  torch::Tensor d = with_derivative ? torch::empty_like(x) : torch::Tensor();
#ifdef LMZOO_HAVE_X86
  const float* src = x.data_ptr<float>();
  float* out = y.data_ptr<float>();
  float* der = with_derivative ? d.data_ptr<float>() : nullptr;
  at::parallel_for(0, x.numel(), 32768, [&](int64_t begin, int64_t end) { gelu_range(src, out, der, begin, end); });
#endif
  return {y, d};
}

struct FusedGeluFunction : torch::autograd::Function<FusedGeluFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    auto [y, d] = gelu_forward(x, /*with_derivative=*/true);
    ctx->save_for_backward({d});
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto d = ctx->get_saved_variables()[0];
    // d is this node's own buffer. When the graph is freed after this backward and no higher-order graph is
    // being built, the product overwrites it instead of taking fresh memory.
    if (!torch::autograd::get_current_graph_task_keep_graph() && !torch::GradMode::is_enabled()) {
      return {d.mul_(grads[0])};
    }
    return {grads[0] * d};
  }
};

}  // namespace

torch::Tensor fused_gelu(const torch::Tensor& x) {
  if (!supported(x)) return torch::gelu(x);
  if (torch::GradMode::is_enabled() && x.requires_grad()) return FusedGeluFunction::apply(x);
  return gelu_forward(x, /*with_derivative=*/false).first;
}

}  // namespace lmzoo
