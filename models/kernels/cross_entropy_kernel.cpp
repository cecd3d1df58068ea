// Fused cross-entropy: forward keeps each row's log-sum-exp; backward writes (exp(x - lse) - onehot) * g / count.
// Shapes: N rows (B * T), V vocabulary.
#include "models/kernels/cross_entropy_kernel.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/kernels/cpu_features.h"
#include "models/kernels/simd_math.h"

namespace lmzoo {

namespace {

#ifdef LMZOO_HAVE_X86
// log(sum_j exp(x_j)) of one row, max-shifted as log_softmax does.
LMZOO_AVX2 float row_logsumexp(const float* x, int64_t V) {
  __m256 vmax = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + 8 <= V; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + j));
  float m = simd::hmax(vmax);
  for (int64_t t = j; t < V; ++t) m = std::max(m, x[t]);
  if (std::isinf(m)) return m;  // all -inf (or an inf): as log_softmax, no finite shift exists
  const __m256 vm = _mm256_set1_ps(m);
  __m256 vsum = _mm256_setzero_ps();
  for (j = 0; j + 8 <= V; j += 8) vsum = _mm256_add_ps(vsum, simd::exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm)));
  float s = simd::hsum(vsum);
  for (int64_t t = j; t < V; ++t) s += std::exp(x[t] - m);
  return m + std::log(s);
}

// dx_j = (exp(x_j - lse) - [j == target]) * scale for one row.
LMZOO_AVX2 void row_grad(const float* x, float lse, int64_t target, float scale, int64_t V, float* dx) {
  const __m256 vl = _mm256_set1_ps(lse), vs = _mm256_set1_ps(scale);
  int64_t j = 0;
  for (; j + 8 <= V; j += 8) {
    _mm256_storeu_ps(dx + j, _mm256_mul_ps(simd::exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), vl)), vs));
  }
  for (; j < V; ++j) dx[j] = std::exp(x[j] - lse) * scale;
  dx[target] -= scale;
}
#endif

bool supported(const torch::Tensor& logits, const torch::Tensor& targets) {
  return kernels::avx2_enabled() && logits.device().is_cpu() && logits.scalar_type() == torch::kFloat &&
         logits.dim() == 2 && targets.device().is_cpu() && targets.scalar_type() == torch::kLong &&
         targets.dim() == 1 && targets.size(0) == logits.size(0);
}

struct FusedCrossEntropyFunction : torch::autograd::Function<FusedCrossEntropyFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits_in,
                               const torch::Tensor& targets_in, int64_t ignore_index) {
    const auto logits = logits_in.contiguous();
    const auto targets = targets_in.contiguous();
    const int64_t N = logits.size(0), V = logits.size(1);
    auto lse = torch::empty({N}, logits.options());  // (N)
    const float* x = logits.data_ptr<float>();
    const int64_t* t = targets.data_ptr<int64_t>();
    float* l = lse.data_ptr<float>();
    for (int64_t r = 0; r < N; ++r) {
      TORCH_CHECK(t[r] == ignore_index || (t[r] >= 0 && t[r] < V), "cross_entropy: target ", t[r],
                  " is out of bounds for ", V, " classes");
    }
#ifdef LMZOO_HAVE_X86
    at::parallel_for(0, N, 16, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) l[r] = row_logsumexp(x + r * V, V);
    });
#endif
    double total = 0.0;
    int64_t count = 0;
    for (int64_t r = 0; r < N; ++r) {
      if (t[r] == ignore_index) continue;
      total += double(l[r]) - double(x[r * V + t[r]]);
      ++count;
    }
    ctx->save_for_backward({logits, targets, lse});
    ctx->saved_data["ignore_index"] = ignore_index;
    ctx->saved_data["count"] = count;
    // 0 / 0 = nan when every target is ignored, as the library's mean reduction gives.
    return torch::full({}, float(total / double(count)), logits.options());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& logits = saved[0];
    const int64_t N = logits.size(0), V = logits.size(1);
    const int64_t ignore_index = ctx->saved_data["ignore_index"].toInt();
    const float scale = grads[0].item<float>() / float(ctx->saved_data["count"].toInt());
    auto dx = torch::empty_like(logits);  // (N, V)
    const float* x = logits.data_ptr<float>();
    const int64_t* t = saved[1].data_ptr<int64_t>();
    const float* l = saved[2].data_ptr<float>();
    float* d = dx.data_ptr<float>();
#ifdef LMZOO_HAVE_X86
    at::parallel_for(0, N, 16, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        if (t[r] == ignore_index) {
          std::fill(d + r * V, d + (r + 1) * V, 0.0f);
        } else {
          row_grad(x + r * V, l[r], t[r], scale, V, d + r * V);
        }
      }
    });
#endif
    return {dx, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor fused_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, int64_t ignore_index) {
  if (!supported(logits, targets)) {
    return torch::nn::functional::cross_entropy(
        logits, targets, torch::nn::functional::CrossEntropyFuncOptions().ignore_index(ignore_index));
  }
  return FusedCrossEntropyFunction::apply(logits, targets, ignore_index);
}

}  // namespace lmzoo
