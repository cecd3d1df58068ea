// Fused clipping + AdamW: one pass for the global gradient norm, one pass per parameter for the update,
// mirroring the ATen op sequence of torch::optim::AdamW::step (mul_, add_, addcmul_, sqrt, div, add_, addcdiv_).
#include "models/kernels/fused_adamw.h"

#include <algorithm>
#include <cmath>

#include "models/kernels/cpu_features.h"
#include "models/kernels/simd_math.h"
#include "models/torch_compat.h"

namespace lmzoo {

namespace {

using Options = torch::optim::AdamWOptions;
using State = torch::optim::AdamWParamState;

bool is_plain_cpu_float(const torch::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == torch::kFloat && !t.is_sparse() && t.is_contiguous();
}

bool fusable(torch::optim::AdamW& optimizer, const std::vector<torch::Tensor>& norm_of) {
  for (const auto& g : norm_of) {
    if (!is_plain_cpu_float(g)) return false;
  }
  for (auto& group : optimizer.param_groups()) {
    if (static_cast<Options&>(group.options()).amsgrad()) return false;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (!is_plain_cpu_float(p) || !is_plain_cpu_float(p.grad()) || p.numel() != p.grad().numel()) return false;
    }
  }
  return true;
}

struct Coefficients {
  float clip, decay, beta1, one_minus_beta1, beta2, one_minus_beta2, sqrt_bias_correction2, eps, neg_step_size;
};

// The per-element update, in the order the library's ops apply it.
inline void update_scalar(float* p, const float* g, float* m, float* v, int64_t begin, int64_t end,
                          const Coefficients& c) {
  for (int64_t i = begin; i < end; ++i) {
    const float gi = g[i] * c.clip;                                      // grad.mul_(clip_coef)
    const float pi = p[i] * c.decay;                                     // p.mul_(1 - lr * wd)
    const float mi = m[i] * c.beta1 + c.one_minus_beta1 * gi;            // exp_avg.mul_(b1).add_(g, 1 - b1)
    const float vi = v[i] * c.beta2 + c.one_minus_beta2 * gi * gi;       // exp_avg_sq.mul_(b2).addcmul_(g, g, 1 - b2)
    const float denom = std::sqrt(vi) / c.sqrt_bias_correction2 + c.eps;  // (sqrt(v) / sqrt(bc2)).add_(eps)
    m[i] = mi;
    v[i] = vi;
    p[i] = pi + c.neg_step_size * mi / denom;                            // p.addcdiv_(m, denom, -step_size)
  }
}

#ifdef LMZOO_HAVE_X86
__attribute__((target("avx2,fma"))) void update_avx2(float* p, const float* g, float* m, float* v, int64_t n,
                                                     const Coefficients& c) {
  const __m256 clip = _mm256_set1_ps(c.clip), decay = _mm256_set1_ps(c.decay), b1 = _mm256_set1_ps(c.beta1),
               omb1 = _mm256_set1_ps(c.one_minus_beta1), b2 = _mm256_set1_ps(c.beta2),
               omb2 = _mm256_set1_ps(c.one_minus_beta2), sbc2 = _mm256_set1_ps(c.sqrt_bias_correction2),
               eps = _mm256_set1_ps(c.eps), step = _mm256_set1_ps(c.neg_step_size);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 gi = _mm256_mul_ps(_mm256_loadu_ps(g + i), clip);
    const __m256 pi = _mm256_mul_ps(_mm256_loadu_ps(p + i), decay);
    const __m256 mi = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(m + i), b1), _mm256_mul_ps(omb1, gi));
    const __m256 vi =
        _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(v + i), b2), _mm256_mul_ps(_mm256_mul_ps(omb2, gi), gi));
    const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), sbc2), eps);
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
    _mm256_storeu_ps(p + i, _mm256_add_ps(pi, _mm256_div_ps(_mm256_mul_ps(step, mi), denom)));
  }
  update_scalar(p, g, m, v, i, n, c);
}

__attribute__((target("avx2,fma"))) double sum_of_squares_avx2(const float* x, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
    const __m256 x2 = _mm256_loadu_ps(x + i + 16), x3 = _mm256_loadu_ps(x + i + 24);
    a0 = _mm256_fmadd_ps(x0, x0, a0);
    a1 = _mm256_fmadd_ps(x1, x1, a1);
    a2 = _mm256_fmadd_ps(x2, x2, a2);
    a3 = _mm256_fmadd_ps(x3, x3, a3);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  double s = 0.0;
  for (float l : lanes) s += l;
  for (; i < n; ++i) s += double(x[i]) * x[i];
  return s;
}
#endif

double sum_of_squares(const float* x, int64_t n) {
#ifdef LMZOO_HAVE_X86
  if (kernels::avx2_enabled()) return sum_of_squares_avx2(x, n);
#endif
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += double(x[i]) * x[i];
  return s;
}

void update(float* p, const float* g, float* m, float* v, int64_t n, const Coefficients& c) {
#ifdef LMZOO_HAVE_X86
  if (kernels::avx2_enabled()) return update_avx2(p, g, m, v, n, c);
#endif
  update_scalar(p, g, m, v, 0, n, c);
}

// The CPU fp32 kernel: one pass for the global norm, one fused pass per parameter for clip + AdamW.
// Returns the unscaled norm; a non-finite one leaves everything untouched.
double cpu_clip_and_adamw_step(torch::optim::AdamW& optimizer, double max_norm, double loss_scale,
                               const std::vector<torch::Tensor>& norm_of) {
  double squares = 0.0;
  for (const auto& g : gradients_for_norm(optimizer, norm_of)) squares += sum_of_squares(g.data_ptr<float>(), g.numel());
  const double total_norm = std::sqrt(squares) / loss_scale;
  if (!std::isfinite(total_norm)) return total_norm;
  float clip = 1.0f;
  if (max_norm > 0) clip = std::min(1.0f, float(max_norm) / (float(total_norm) + 1e-6f));  // clamp(max / (norm + 1e-6), max=1)
  if (loss_scale != 1.0) clip = float(clip / loss_scale);
  for (auto& group : optimizer.param_groups()) {
    const auto& o = static_cast<Options&>(group.options());
    const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      State& s = adamw_state_for(optimizer, p);
      if (!is_plain_cpu_float(s.exp_avg())) s.exp_avg(s.exp_avg().to(torch::kFloat).contiguous());
      if (!is_plain_cpu_float(s.exp_avg_sq())) s.exp_avg_sq(s.exp_avg_sq().to(torch::kFloat).contiguous());
      s.step(s.step() + 1);
      const double bias_correction1 = 1 - std::pow(beta1, double(s.step()));
      const double bias_correction2 = 1 - std::pow(beta2, double(s.step()));
      Coefficients c;
      c.clip = clip;
      c.decay = o.weight_decay() != 0 ? float(1 - o.lr() * o.weight_decay()) : 1.0f;
      c.beta1 = float(beta1);
      c.one_minus_beta1 = float(1 - beta1);
      c.beta2 = float(beta2);
      c.one_minus_beta2 = float(1 - beta2);
      c.sqrt_bias_correction2 = float(std::sqrt(bias_correction2));
      c.eps = float(o.eps());
      c.neg_step_size = float(-(o.lr() / bias_correction1));
      update(p.data_ptr<float>(), p.grad().data_ptr<float>(), s.exp_avg().data_ptr<float>(),
             s.exp_avg_sq().data_ptr<float>(), p.numel(), c);
      p.unsafeGetTensorImpl()->bump_version();  // as the library's in-place ops do
      s.exp_avg().unsafeGetTensorImpl()->bump_version();
      s.exp_avg_sq().unsafeGetTensorImpl()->bump_version();
    }
  }
  return total_norm;
}

// The library's own path: clip_grad_norm_'s arithmetic (a host sync) and AdamW::step, one parameter at a time.
double library_clip_and_adamw_step(torch::optim::AdamW& optimizer, double max_norm, double loss_scale,
                                   const std::vector<torch::Tensor>& norm_of) {
  std::vector<torch::Tensor> norms;
  for (const auto& g : gradients_for_norm(optimizer, norm_of)) norms.push_back(g.norm(2).to(torch::kDouble));
  const double norm = norms.empty() ? 0.0 : torch::stack(norms).norm().item<double>() / loss_scale;
  if (!std::isfinite(norm)) return norm;
  // clip_grad_norm_: the gradients times min(1, max / (norm + 1e-6)); and here the loss scale divided out.
  const double clip = max_norm > 0 ? std::min(1.0, max_norm / (norm + 1e-6)) : 1.0;
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      if (p.grad().defined() && clip / loss_scale != 1.0) p.mutable_grad().mul_(clip / loss_scale);
    }
  }
  optimizer.step();
  return norm;
}

AdamWStepResult host_decided(double norm) {
  return {torch::tensor(norm, torch::kDouble), torch::tensor(std::isfinite(norm) ? 0.0f : 1.0f)};
}

}  // namespace

torch::optim::AdamWParamState& adamw_state_for(torch::optim::AdamW& optimizer, const torch::Tensor& p) {
  using Key = typename std::remove_reference_t<decltype(optimizer.state())>::key_type;
  const Key key = compat::optimizer_state_key<Key>(p);
  auto it = optimizer.state().find(key);
  if (it == optimizer.state().end()) {
    auto fresh = std::make_unique<State>();
    fresh->step(0);
    fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    optimizer.state()[key] = std::move(fresh);
    it = optimizer.state().find(key);
  }
  return static_cast<State&>(*it->second);
}

std::vector<torch::Tensor> gradients_for_norm(torch::optim::AdamW& optimizer, const std::vector<torch::Tensor>& norm_of) {
  if (!norm_of.empty()) return norm_of;
  std::vector<torch::Tensor> grads;
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      if (p.grad().defined()) grads.push_back(p.grad());
    }
  }
  return grads;
}

AdamWStepResult clip_and_adamw_step(torch::optim::AdamW& optimizer, double max_norm, const torch::Tensor& loss_scale,
                                    const torch::Tensor& uncounted, const std::vector<torch::Tensor>& norm_of) {
  torch::NoGradGuard no_grad;
  const bool cpu_kernel = !kernels::switched_off() && fusable(optimizer, norm_of);
  if (!cpu_kernel && multi_tensor_adamw_supported(optimizer, norm_of)) {
    return multi_tensor_clip_and_adamw_step(optimizer, max_norm, loss_scale, uncounted, norm_of);
  }
  // The host paths decide on the host (a sync on the library path) and never leave steps uncounted.
  const double scale = loss_scale.defined() ? loss_scale.item<double>() : 1.0;
  return host_decided(cpu_kernel ? cpu_clip_and_adamw_step(optimizer, max_norm, scale, norm_of)
                                 : library_clip_and_adamw_step(optimizer, max_norm, scale, norm_of));
}

void take_back_skipped_steps(torch::optim::AdamW& optimizer, int64_t n) {
  if (n == 0) return;
  for (auto& item : optimizer.state()) {
    auto& s = static_cast<State&>(*item.second);
    s.step(std::max<int64_t>(0, s.step() - n));
  }
}

}  // namespace lmzoo
