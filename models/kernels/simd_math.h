// Vectorised float math for the AVX2/FMA kernels: exp (Cephes polynomial), erf given exp(-x^2) (Abramowitz-Stegun
// 7.1.26, as ATen's AVX2 erf), horizontal sum and max. Leaves out: other ISAs (callers check kernels::avx2_enabled()).
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LMZOO_HAVE_X86 1
#define LMZOO_AVX2 __attribute__((target("avx2,fma")))
#endif

namespace lmzoo::simd {

#ifdef LMZOO_HAVE_X86

// exp of 8 floats: Cephes' polynomial (as in avx_mathfun), about 1 ulp; exactly 0 below -88.37. A NaN stays
// NaN: min/max return their second operand when either is NaN, so x goes second (a training step must see it).
LMZOO_AVX2 inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(88.3762626647949f), x);
  x = _mm256_max_ps(_mm256_set1_ps(-88.3762626647949f), x);
  const __m256 fx =
      _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i pow2n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(pow2n));
}

// erf of 8 floats given e = exp(-x^2): sign(x) (1 - (((((p5 t + p4) t + p3) t + p2) t + p1) t e),
// t = 1 / (1 + p |x|), the formula (and constants) of ATen's Vectorized<float>::erf; absolute error below 1.5e-7.
LMZOO_AVX2 inline __m256 erf8_given_exp(__m256 x, __m256 e) {
  const __m256 neg_zero = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
  const __m256 sign = _mm256_and_ps(neg_zero, x);
  const __m256 ax = _mm256_xor_ps(sign, x);
  const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), ax, one));
  __m256 r = _mm256_fmadd_ps(_mm256_set1_ps(1.061405429f), t, _mm256_set1_ps(-1.453152027f));
  r = _mm256_fmadd_ps(r, t, _mm256_set1_ps(1.421413741f));
  r = _mm256_fmadd_ps(r, t, _mm256_set1_ps(-0.284496736f));
  r = _mm256_fmadd_ps(r, t, _mm256_set1_ps(0.254829592f));
  return _mm256_xor_ps(sign, _mm256_fnmadd_ps(_mm256_mul_ps(e, t), r, one));
}

LMZOO_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

LMZOO_AVX2 inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}

#endif  // LMZOO_HAVE_X86

}  // namespace lmzoo::simd
