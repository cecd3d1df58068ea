// Fused LayerNorm: rows of C features; forward y = (x - mean) * rstd * gamma, backward (ATen's form)
// dx = rstd * dy * gamma + b * x + c with b = (db * mean - ds) * rstd^3 / C, c = -b * mean - db * rstd / C,
// ds = sum dy * gamma * x, db = sum dy * gamma; dgamma = sum over rows of dy * (x - mean) * rstd.
// Fused RMSNorm: y = x * r * gamma with r = 1 / sqrt(mean(x^2) + eps); backward
// dx = r * dy * gamma - x * r^3 * (sum dy * gamma * x) / C, dgamma = sum over rows of dy * x * r.
#include "models/kernels/norm_kernel.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "models/kernels/cpu_features.h"
#include "models/kernels/simd_math.h"

namespace lmzoo {

namespace {

#ifdef LMZOO_HAVE_X86
LMZOO_AVX2 void forward_rows(const float* x, const float* gamma, int64_t C, float eps, int64_t begin, int64_t end,
                             float* y, float* mean, float* rstd) {
  const float inv_c = 1.0f / float(C);
  for (int64_t r = begin; r < end; ++r) {
    const float* xr = x + r * C;
    __m256 s = _mm256_setzero_ps();
    for (int64_t j = 0; j < C; j += 8) s = _mm256_add_ps(s, _mm256_loadu_ps(xr + j));
    const float m = simd::hsum(s) * inv_c;
    const __m256 vm = _mm256_set1_ps(m);
    __m256 q = _mm256_setzero_ps();
    for (int64_t j = 0; j < C; j += 8) {
      const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(xr + j), vm);
      q = _mm256_fmadd_ps(d, d, q);
    }
    const float rs = 1.0f / std::sqrt(std::max(simd::hsum(q) * inv_c, 0.0f) + eps);
    const __m256 vrs = _mm256_set1_ps(rs), vshift = _mm256_set1_ps(-rs * m);
    float* yr = y + r * C;
    for (int64_t j = 0; j < C; j += 8) {
      const __m256 xhat = _mm256_fmadd_ps(_mm256_loadu_ps(xr + j), vrs, vshift);  // x * rstd - rstd * mean
      _mm256_storeu_ps(yr + j, _mm256_mul_ps(xhat, _mm256_loadu_ps(gamma + j)));
    }
    mean[r] = m;
    rstd[r] = rs;
  }
}

// dx for rows [begin, end) and their contribution to dgamma (added into dgamma_partial, C floats).
LMZOO_AVX2 void backward_rows(const float* x, const float* gamma, const float* dy, const float* mean,
                              const float* rstd, int64_t C, int64_t begin, int64_t end, float* dx,
                              float* dgamma_partial) {
  const float inv_c = 1.0f / float(C);
  for (int64_t r = begin; r < end; ++r) {
    const float* xr = x + r * C;
    const float* gr = dy + r * C;
    __m256 vds = _mm256_setzero_ps(), vdb = _mm256_setzero_ps();
    for (int64_t j = 0; j < C; j += 8) {
      const __m256 gg = _mm256_mul_ps(_mm256_loadu_ps(gr + j), _mm256_loadu_ps(gamma + j));
      vds = _mm256_fmadd_ps(gg, _mm256_loadu_ps(xr + j), vds);
      vdb = _mm256_add_ps(vdb, gg);
    }
    const float ds = simd::hsum(vds), db = simd::hsum(vdb), a = rstd[r], m = mean[r];
    const float b = (db * m - ds) * a * a * a * inv_c;
    const float c = -b * m - db * a * inv_c;
    const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b), vc = _mm256_set1_ps(c),
                 vshift = _mm256_set1_ps(-a * m);
    float* dxr = dx + r * C;
    for (int64_t j = 0; j < C; j += 8) {
      const __m256 xv = _mm256_loadu_ps(xr + j), g = _mm256_loadu_ps(gr + j);
      const __m256 dxv = _mm256_fmadd_ps(_mm256_mul_ps(va, g), _mm256_loadu_ps(gamma + j),
                                         _mm256_fmadd_ps(vb, xv, vc));
      _mm256_storeu_ps(dxr + j, dxv);
      const __m256 xhat = _mm256_fmadd_ps(xv, va, vshift);
      _mm256_storeu_ps(dgamma_partial + j, _mm256_fmadd_ps(g, xhat, _mm256_loadu_ps(dgamma_partial + j)));
    }
  }
}

LMZOO_AVX2 void rms_forward_rows(const float* x, const float* gamma, int64_t C, float eps, int64_t begin,
                                 int64_t end, float* y, float* rms_inv) {
  for (int64_t r = begin; r < end; ++r) {
    const float* xr = x + r * C;
    __m256 q = _mm256_setzero_ps();
    for (int64_t j = 0; j < C; j += 8) {
      const __m256 v = _mm256_loadu_ps(xr + j);
      q = _mm256_fmadd_ps(v, v, q);
    }
    const float rs = 1.0f / std::sqrt(simd::hsum(q) / float(C) + eps);
    const __m256 vrs = _mm256_set1_ps(rs);
    float* yr = y + r * C;
    for (int64_t j = 0; j < C; j += 8) {
      _mm256_storeu_ps(yr + j, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(xr + j), vrs), _mm256_loadu_ps(gamma + j)));
    }
    rms_inv[r] = rs;
  }
}

// dx for rows [begin, end) and their contribution to dgamma (added into dgamma_partial, C floats).
LMZOO_AVX2 void rms_backward_rows(const float* x, const float* gamma, const float* dy, const float* rms_inv,
                                  int64_t C, int64_t begin, int64_t end, float* dx, float* dgamma_partial) {
  for (int64_t r = begin; r < end; ++r) {
    const float* xr = x + r * C;
    const float* gr = dy + r * C;
    __m256 vdot = _mm256_setzero_ps();
    for (int64_t j = 0; j < C; j += 8) {
      const __m256 gg = _mm256_mul_ps(_mm256_loadu_ps(gr + j), _mm256_loadu_ps(gamma + j));
      vdot = _mm256_fmadd_ps(gg, _mm256_loadu_ps(xr + j), vdot);
    }
    const float a = rms_inv[r];
    const __m256 va = _mm256_set1_ps(a), vk = _mm256_set1_ps(-a * a * a * simd::hsum(vdot) / float(C));
    float* dxr = dx + r * C;
    for (int64_t j = 0; j < C; j += 8) {
      const __m256 xv = _mm256_loadu_ps(xr + j), g = _mm256_loadu_ps(gr + j);
      const __m256 gg = _mm256_mul_ps(g, _mm256_loadu_ps(gamma + j));
      _mm256_storeu_ps(dxr + j, _mm256_fmadd_ps(va, gg, _mm256_mul_ps(vk, xv)));
      const __m256 xhat = _mm256_mul_ps(xv, va);
      _mm256_storeu_ps(dgamma_partial + j, _mm256_fmadd_ps(g, xhat, _mm256_loadu_ps(dgamma_partial + j)));
    }
  }
}
#endif

bool supported(const torch::Tensor& x, const torch::Tensor& weight) {
  return kernels::avx2_enabled() && x.device().is_cpu() && x.scalar_type() == torch::kFloat && weight.defined() &&
         weight.device().is_cpu() && weight.scalar_type() == torch::kFloat && weight.dim() == 1 && x.dim() >= 1 &&
         x.size(-1) == weight.size(0) && weight.size(0) % 8 == 0 && x.numel() > 0;
}

// Backward over `rows` rows in parallel chunks: rows_fn(begin, end, dgamma_partial) writes dx for its rows
// and adds their dgamma into its chunk's partial (C floats). Returns dgamma (C), the partials added in
// chunk order (deterministic for a given thread count).
template <typename RowsFn>
torch::Tensor backward_in_chunks(int64_t rows, const torch::Tensor& weight, const RowsFn& rows_fn) {
  const int64_t C = weight.size(0);
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), rows));
  const int64_t per_chunk = (rows + chunks - 1) / chunks;
  std::vector<float> partial(chunks * C, 0.0f);
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      rows_fn(k * per_chunk, std::min(rows, (k + 1) * per_chunk), partial.data() + k * C);
    }
  });
  auto dgamma = torch::zeros({C}, weight.options());  // (C)
  float* dg = dgamma.data_ptr<float>();
  for (int64_t k = 0; k < chunks; ++k) {
    for (int64_t j = 0; j < C; ++j) dg[j] += partial[k * C + j];
  }
  return dgamma;
}

struct FusedLayerNormFunction : torch::autograd::Function<FusedLayerNormFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_in,
                               const torch::Tensor& weight_in, double eps) {
    const auto x = x_in.contiguous();
    const auto weight = weight_in.contiguous();
    const int64_t C = weight.size(0), rows = x.numel() / C;
    auto y = torch::empty_like(x);
    auto mean = torch::empty({rows}, x.options());  // (rows)
    auto rstd = torch::empty({rows}, x.options());  // (rows)
#ifdef LMZOO_HAVE_X86
    const float* xp = x.data_ptr<float>();
    const float* gp = weight.data_ptr<float>();
    float *yp = y.data_ptr<float>(), *mp = mean.data_ptr<float>(), *rp = rstd.data_ptr<float>();
    at::parallel_for(0, rows, 64, [&](int64_t begin, int64_t end) {
      forward_rows(xp, gp, C, float(eps), begin, end, yp, mp, rp);
    });
#endif
    ctx->save_for_backward({x, weight, mean, rstd});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &weight = saved[1], &mean = saved[2], &rstd = saved[3];
    const auto dy = grads[0].contiguous();
    const int64_t C = weight.size(0), rows = x.numel() / C;
    auto dx = torch::empty_like(x);
    torch::Tensor dgamma;
#ifdef LMZOO_HAVE_X86
    const float *xp = x.data_ptr<float>(), *gp = weight.data_ptr<float>(), *dyp = dy.data_ptr<float>();
    const float *mp = mean.data_ptr<float>(), *rp = rstd.data_ptr<float>();
    float* dxp = dx.data_ptr<float>();
    dgamma = backward_in_chunks(rows, weight, [&](int64_t begin, int64_t end, float* partial) {
      backward_rows(xp, gp, dyp, mp, rp, C, begin, end, dxp, partial);
    });
#endif
    return {dx, dgamma, torch::Tensor()};
  }
};

struct FusedRmsNormFunction : torch::autograd::Function<FusedRmsNormFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_in,
                               const torch::Tensor& weight_in, double eps) {
    const auto x = x_in.contiguous();
    const auto weight = weight_in.contiguous();
    const int64_t C = weight.size(0), rows = x.numel() / C;
    auto y = torch::empty_like(x);
    auto rms_inv = torch::empty({rows}, x.options());  // (rows)
#ifdef LMZOO_HAVE_X86
    const float *xp = x.data_ptr<float>(), *gp = weight.data_ptr<float>();
    float *yp = y.data_ptr<float>(), *rp = rms_inv.data_ptr<float>();
    at::parallel_for(0, rows, 64, [&](int64_t begin, int64_t end) {
      rms_forward_rows(xp, gp, C, float(eps), begin, end, yp, rp);
    });
#endif
    ctx->save_for_backward({x, weight, rms_inv});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &weight = saved[1], &rms_inv = saved[2];
    const auto dy = grads[0].contiguous();
    const int64_t C = weight.size(0), rows = x.numel() / C;
    auto dx = torch::empty_like(x);
    torch::Tensor dgamma;
#ifdef LMZOO_HAVE_X86
    const float *xp = x.data_ptr<float>(), *gp = weight.data_ptr<float>(), *dyp = dy.data_ptr<float>();
    const float* rp = rms_inv.data_ptr<float>();
    float* dxp = dx.data_ptr<float>();
    dgamma = backward_in_chunks(rows, weight, [&](int64_t begin, int64_t end, float* partial) {
      rms_backward_rows(xp, gp, dyp, rp, C, begin, end, dxp, partial);
    });
#endif
    return {dx, dgamma, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor fused_rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  if (!supported(x, weight)) {
    auto x32 = x.to(torch::kFloat);
    auto normed = x32 * torch::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps);
    return normed.to(x.scalar_type()) * weight;
  }
  return FusedRmsNormFunction::apply(x, weight, eps);
}

torch::Tensor fused_layer_norm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                               double eps) {
  if (!supported(x, weight) || (bias.defined() && bias.scalar_type() != torch::kFloat)) {
    return torch::layer_norm(x, {x.size(-1)}, weight, bias, eps);
  }
  // (An undefined tensor cannot be a custom Function's input in LibTorch 1.13: the bias is added outside.)
  auto y = FusedLayerNormFunction::apply(x, weight, eps);
  return bias.defined() ? y + bias : y;
}

}  // namespace lmzoo
