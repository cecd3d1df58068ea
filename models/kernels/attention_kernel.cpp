// Fused causal attention: one pass per (batch, head) over the QKV buffer, computing only the causal triangle,
// with AVX2/FMA intrinsics. Backward keeps the probabilities from forward. Leaves out: non-x86 CPUs.
// Shapes: B batch, T positions, C d_model, nh heads, hs head size (8 * NV), Tp = T rounded up to 8.
#include "models/kernels/attention_kernel.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <vector>

#include "models/kernels/cpu_features.h"
#include "models/kernels/simd_math.h"

namespace lmzoo {

namespace {

int64_t round_up8(int64_t n) { return (n + 7) / 8 * 8; }

#ifdef LMZOO_HAVE_X86

using simd::exp8;
using simd::hmax;
using simd::hsum;

// out[0, 8U) = sum_d a[d] * mt[d * Tp + (0, 8U)]: a row times a transposed (hs, Tp) matrix, U vectors wide.
template <int U>
LMZOO_AVX2 inline void row_times_t(const float* a, const float* mt, int64_t Tp, int64_t hs, float* out) {
  __m256 acc[U];
  for (int u = 0; u < U; ++u) acc[u] = _mm256_setzero_ps();
  for (int64_t d = 0; d < hs; ++d) {
    const __m256 ad = _mm256_broadcast_ss(a + d);
    const float* row = mt + d * Tp;
    for (int u = 0; u < U; ++u) acc[u] = _mm256_fmadd_ps(ad, _mm256_loadu_ps(row + 8 * u), acc[u]);
  }
  for (int u = 0; u < U; ++u) _mm256_storeu_ps(out + 8 * u, acc[u]);
}

// The same over nv vectors (columns [0, 8 nv)), in blocks of at most 8 vectors.
LMZOO_AVX2 void row_times_t_n(const float* a, const float* mt, int64_t Tp, int64_t hs, int64_t nv, float* out) {
  int64_t c = 0;
  for (; nv - c >= 8; c += 8) row_times_t<8>(a, mt + 8 * c, Tp, hs, out + 8 * c);
  const float* m = mt + 8 * c;
  float* o = out + 8 * c;
  switch (nv - c) {
    case 1: row_times_t<1>(a, m, Tp, hs, o); break;
    case 2: row_times_t<2>(a, m, Tp, hs, o); break;
    case 3: row_times_t<3>(a, m, Tp, hs, o); break;
    case 4: row_times_t<4>(a, m, Tp, hs, o); break;
    case 5: row_times_t<5>(a, m, Tp, hs, o); break;
    case 6: row_times_t<6>(a, m, Tp, hs, o); break;
    case 7: row_times_t<7>(a, m, Tp, hs, o); break;
    default: break;
  }
}

// out[0, hs) = sum_{j < n} w[j * ws] * rows[j * stride + (0, hs)], hs = 8 NV.
template <int NV>
LMZOO_AVX2 inline void weighted_rows(const float* w, int64_t ws, const float* rows, int64_t stride, int64_t n,
                                     float* out) {
  constexpr bool kTwoChains = NV <= 4;  // two accumulator sets hide FMA latency when registers allow
  __m256 a0[NV], a1[NV];
  for (int c = 0; c < NV; ++c) a0[c] = a1[c] = _mm256_setzero_ps();
  int64_t j = 0;
  if (kTwoChains) {
    for (; j + 1 < n; j += 2) {
      const __m256 w0 = _mm256_broadcast_ss(w + j * ws), w1 = _mm256_broadcast_ss(w + (j + 1) * ws);
      const float* r0 = rows + j * stride;
      const float* r1 = r0 + stride;
      for (int c = 0; c < NV; ++c) {
        a0[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(r0 + 8 * c), a0[c]);
        a1[c] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(r1 + 8 * c), a1[c]);
      }
    }
  }
  for (; j < n; ++j) {
    const __m256 w0 = _mm256_broadcast_ss(w + j * ws);
    const float* r0 = rows + j * stride;
    for (int c = 0; c < NV; ++c) a0[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(r0 + 8 * c), a0[c]);
  }
  for (int c = 0; c < NV; ++c) _mm256_storeu_ps(out + 8 * c, _mm256_add_ps(a0[c], a1[c]));
}

// Two rows at once: out0 / out1 [0, 32) = sum_d a0[d] / a1[d] * mt[d * Tp + (0, 32)], sharing the loads of mt.
template <int U>
LMZOO_AVX2 inline void row_times_t2(const float* a0, const float* a1, const float* mt, int64_t Tp, int64_t hs,
                                    float* out0, float* out1) {
  __m256 c0[U], c1[U];
  for (int u = 0; u < U; ++u) c0[u] = c1[u] = _mm256_setzero_ps();
  for (int64_t d = 0; d < hs; ++d) {
    const __m256 b0 = _mm256_broadcast_ss(a0 + d), b1 = _mm256_broadcast_ss(a1 + d);
    const float* row = mt + d * Tp;
    for (int u = 0; u < U; ++u) {
      const __m256 m = _mm256_loadu_ps(row + 8 * u);
      c0[u] = _mm256_fmadd_ps(b0, m, c0[u]);
      c1[u] = _mm256_fmadd_ps(b1, m, c1[u]);
    }
  }
  for (int u = 0; u < U; ++u) {
    _mm256_storeu_ps(out0 + 8 * u, c0[u]);
    _mm256_storeu_ps(out1 + 8 * u, c1[u]);
  }
}

// row_times_t2 over nv vectors, in blocks of at most 4 (8 accumulators).
LMZOO_AVX2 void row_times_t2_n(const float* a0, const float* a1, const float* mt, int64_t Tp, int64_t hs, int64_t nv,
                               float* out0, float* out1) {
  int64_t c = 0;
  for (; nv - c >= 4; c += 4) row_times_t2<4>(a0, a1, mt + 8 * c, Tp, hs, out0 + 8 * c, out1 + 8 * c);
  const float* m = mt + 8 * c;
  switch (nv - c) {
    case 1: row_times_t2<1>(a0, a1, m, Tp, hs, out0 + 8 * c, out1 + 8 * c); break;
    case 2: row_times_t2<2>(a0, a1, m, Tp, hs, out0 + 8 * c, out1 + 8 * c); break;
    case 3: row_times_t2<3>(a0, a1, m, Tp, hs, out0 + 8 * c, out1 + 8 * c); break;
    default: break;
  }
}

// Two weighted sums over the same rows: out0 / out1 [0, hs) = sum_{j < n} w0[j ws] / w1[j ws] * rows_j (NV <= 4).
template <int NV>
LMZOO_AVX2 inline void weighted_rows2(const float* w0, const float* w1, int64_t ws, const float* rows, int64_t stride,
                                      int64_t n, float* out0, float* out1) {
  __m256 c0[NV], c1[NV];
  for (int c = 0; c < NV; ++c) c0[c] = c1[c] = _mm256_setzero_ps();
  for (int64_t j = 0; j < n; ++j) {
    const __m256 b0 = _mm256_broadcast_ss(w0 + j * ws), b1 = _mm256_broadcast_ss(w1 + j * ws);
    const float* r = rows + j * stride;
    for (int c = 0; c < NV; ++c) {
      const __m256 x = _mm256_loadu_ps(r + 8 * c);
      c0[c] = _mm256_fmadd_ps(b0, x, c0[c]);
      c1[c] = _mm256_fmadd_ps(b1, x, c1[c]);
    }
  }
  for (int c = 0; c < NV; ++c) {
    _mm256_storeu_ps(out0 + 8 * c, c0[c]);
    _mm256_storeu_ps(out1 + 8 * c, c1[c]);
  }
}

// dst[c * dst_stride + r] = src[r * src_stride + c] for an 8 x 8 block (unpack, shuffle, swap 128-bit halves).
LMZOO_AVX2 inline void transpose8x8(const float* src, int64_t src_stride, float* dst, int64_t dst_stride) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * src_stride);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * dst_stride, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * dst_stride, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

// (hs, Tp) transpose of a contiguous (T, hs) block, zero in columns [T, Tp); hs is a multiple of 8.
LMZOO_AVX2 void transpose_rows(const float* src, int64_t T, int64_t Tp, int64_t hs, float* dst) {
  const int64_t T8 = T / 8 * 8;
  for (int64_t j = 0; j < T8; j += 8) {
    for (int64_t d = 0; d < hs; d += 8) transpose8x8(src + j * hs + d, hs, dst + d * Tp + j, Tp);
  }
  for (int64_t d = 0; d < hs; ++d) {
    for (int64_t j = T8; j < Tp; ++j) dst[d * Tp + j] = j < T ? src[j * hs + d] : 0.0f;
  }
}

// Copies T rows of hs = 8 NV floats (row stride `stride`) into a contiguous (T, hs) block: rows of the (T, 3C)
// QKV buffer are 3C floats apart, which maps every head's rows onto a few L1 sets.
template <int NV>
LMZOO_AVX2 inline void gather_rows(const float* src, int64_t stride, int64_t T, float* dst) {
  for (int64_t j = 0; j < T; ++j) {
    for (int c = 0; c < NV; ++c) _mm256_storeu_ps(dst + j * 8 * NV + 8 * c, _mm256_loadu_ps(src + j * stride + 8 * c));
  }
}

// Per-thread scratch for one (batch, head): transposed keys or values (hs, Tp), contiguous copies of
// four (T, hs) row blocks, score gradients (T, Tp) and two score rows (Tp).
struct Scratch {
  std::vector<float> transposed, a, b, c, d, ds, row, row2;
  Scratch(int64_t T, int64_t hs)
      : transposed(hs * round_up8(T)), a(T * hs), b(T * hs), c(T * hs), d(T * hs), ds(T * round_up8(T)),
        row(round_up8(T)), row2(round_up8(T)) {}
};

// scale * scores of vector c of a row of nv vectors, -inf in the last vector's lanes outside `live`.
LMZOO_AVX2 inline __m256 scaled_scores(const float* srow, int64_t c, int64_t nv, __m256 vscale, __m256 live) {
  const __m256 s = _mm256_mul_ps(_mm256_loadu_ps(srow + 8 * c), vscale);
  if (c + 1 < nv) return s;
  return _mm256_blendv_ps(_mm256_set1_ps(-std::numeric_limits<float>::infinity()), s, live);
}

// Softmax of one score row in place: srow holds q_i . k_j for j < 8 nv (nv = ceil(n / 8)); on return it holds
// p_ij = softmax_j(scale q_i . k_j) for j < n and 0 for n <= j < 8 nv. probs, when given, receives the row
// zero-padded to Tp.
LMZOO_AVX2 void softmax_row(float* srow, int64_t n, float scale, float* probs, int64_t Tp) {
  const int64_t nv = (n + 7) / 8;
  const __m256 vscale = _mm256_set1_ps(scale);
  // Lanes of the last vector that hold real scores (j < n).
  const __m256 live = _mm256_cmp_ps(_mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_ps(float(n - 8 * (nv - 1))),
                                    _CMP_LT_OQ);
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 vmax = neg_inf;
  for (int64_t c = 0; c < nv; ++c) vmax = _mm256_max_ps(vmax, scaled_scores(srow, c, nv, vscale, live));
  const __m256 vm = _mm256_set1_ps(hmax(vmax));
  __m256 vsum = _mm256_setzero_ps();
  for (int64_t c = 0; c < nv; ++c) {
    // exp8 clamps -inf to -88.4, where it returns exactly 0: future positions get probability 0.
    const __m256 e = exp8(_mm256_sub_ps(scaled_scores(srow, c, nv, vscale, live), vm));
    vsum = _mm256_add_ps(vsum, e);
    _mm256_storeu_ps(srow + 8 * c, e);
  }
  const __m256 inv = _mm256_set1_ps(1.0f / hsum(vsum));
  for (int64_t c = 0; c < nv; ++c) {
    const __m256 p = _mm256_mul_ps(_mm256_loadu_ps(srow + 8 * c), inv);
    _mm256_storeu_ps(srow + 8 * c, p);
    if (probs) _mm256_storeu_ps(probs + 8 * c, p);
  }
  if (probs) {
    for (int64_t j = 8 * nv; j < Tp; ++j) probs[j] = 0.0f;
  }
}

// Gradient of one row of scores: ds_ij = scale * p_ij * (dp_ij - sum_j' p_ij' dp_ij') for j < 8 nv, where dp
// holds dy_i . v_j and p the row's probabilities (zero past the diagonal); zero-padded to Tp.
LMZOO_AVX2 void score_grad_row(const float* dp, const float* p, int64_t n, float scale, float* dsr, int64_t Tp) {
  const int64_t nv = (n + 7) / 8;
  __m256 acc = _mm256_setzero_ps();
  for (int64_t c = 0; c < nv; ++c) acc = _mm256_fmadd_ps(_mm256_loadu_ps(p + 8 * c), _mm256_loadu_ps(dp + 8 * c), acc);
  const __m256 rowdot = _mm256_set1_ps(hsum(acc)), vscale = _mm256_set1_ps(scale);
  for (int64_t c = 0; c < nv; ++c) {
    const __m256 g = _mm256_sub_ps(_mm256_loadu_ps(dp + 8 * c), rowdot);
    _mm256_storeu_ps(dsr + 8 * c, _mm256_mul_ps(vscale, _mm256_mul_ps(_mm256_loadu_ps(p + 8 * c), g)));
  }
  for (int64_t j = 8 * nv; j < Tp; ++j) dsr[j] = 0.0f;
}

// One (batch, head): y rows i = sum_{j <= i} p_ij v_j with p = softmax_j(scale q_i . k_j). qkv and y point at
// the batch's (T, 3C) and (T, C) blocks; probs (T, Tp), when given, receives p with zeros past the diagonal.
// Rows go in pairs (sharing every load of k and v) while the accumulators fit in registers (hs <= 32).
template <int NV>
LMZOO_AVX2 void forward_head(const float* qkv, int64_t T, int64_t C, int64_t h, float scale, float* y, float* probs,
                             Scratch& scratch) {
  constexpr int64_t hs = 8 * NV;
  const int64_t C3 = 3 * C, Tp = round_up8(T);
  float* kt = scratch.transposed.data();
  float* q = scratch.a.data();  // (T, hs)
  float* v = scratch.b.data();  // (T, hs)
  float* k = scratch.c.data();  // (T, hs)
  float* s0 = scratch.row.data();
  float* s1 = scratch.row2.data();
  gather_rows<NV>(qkv + h * hs, C3, T, q);
  gather_rows<NV>(qkv + C + h * hs, C3, T, k);
  gather_rows<NV>(qkv + 2 * C + h * hs, C3, T, v);
  transpose_rows(k, T, Tp, hs, kt);  // (hs, Tp)
  auto probs_row = [&](int64_t i) { return probs ? probs + i * Tp : nullptr; };
  int64_t i = 0;
  if constexpr (NV <= 4) {
    for (; i + 1 < T; i += 2) {
      row_times_t2_n(q + i * hs, q + (i + 1) * hs, kt, Tp, hs, (i + 2 + 7) / 8, s0, s1);
      softmax_row(s0, i + 1, scale, probs_row(i), Tp);
      softmax_row(s1, i + 2, scale, probs_row(i + 1), Tp);
      s0[i + 1] = 0.0f;  // row i does not see position i + 1
      weighted_rows2<NV>(s0, s1, 1, v, hs, i + 2, y + i * C + h * hs, y + (i + 1) * C + h * hs);
    }
  }
  for (; i < T; ++i) {
    const int64_t n = i + 1;
    row_times_t_n(q + i * hs, kt, Tp, hs, (n + 7) / 8, s0);  // q_i . k_j, j < 8 nv
    softmax_row(s0, n, scale, probs_row(i), Tp);
    weighted_rows<NV>(s0, 1, v, hs, n, y + i * C + h * hs);
  }
}

// Gradients of one (batch, head) into dqkv's (T, 3C) block, from dy's (T, C) block and forward's probs (T, Tp).
// ds (T, Tp) holds scale * p * (dp - rowdot), the gradient of the scores q_i . k_j. Pairs of rows (and of
// columns for dk, dv) share loads while hs <= 32.
template <int NV>
LMZOO_AVX2 void backward_head(const float* qkv, const float* probs, const float* dy, int64_t T, int64_t C, int64_t h,
                              float scale, float* dqkv, Scratch& scratch) {
  constexpr int64_t hs = 8 * NV;
  const int64_t C3 = 3 * C, Tp = round_up8(T);
  float* vt = scratch.transposed.data();
  float* q = scratch.a.data();    // (T, hs)
  float* k = scratch.b.data();    // (T, hs)
  float* dyh = scratch.c.data();  // (T, hs)
  float* v = scratch.d.data();    // (T, hs)
  float* ds = scratch.ds.data();
  float* s0 = scratch.row.data();
  float* s1 = scratch.row2.data();
  float* dq = dqkv + h * hs;
  float* dk = dqkv + C + h * hs;
  float* dv = dqkv + 2 * C + h * hs;
  gather_rows<NV>(qkv + h * hs, C3, T, q);
  gather_rows<NV>(qkv + C + h * hs, C3, T, k);
  gather_rows<NV>(qkv + 2 * C + h * hs, C3, T, v);
  gather_rows<NV>(dy + h * hs, C, T, dyh);
  transpose_rows(v, T, Tp, hs, vt);  // (hs, Tp)
  int64_t i = 0;
  if constexpr (NV <= 4) {
    for (; i + 1 < T; i += 2) {
      row_times_t2_n(dyh + i * hs, dyh + (i + 1) * hs, vt, Tp, hs, (i + 2 + 7) / 8, s0, s1);  // dp = dy_i . v_j
      score_grad_row(s0, probs + i * Tp, i + 1, scale, ds + i * Tp, Tp);
      score_grad_row(s1, probs + (i + 1) * Tp, i + 2, scale, ds + (i + 1) * Tp, Tp);
      // dq_i = sum_j ds_ij k_j (ds_{i, i+1} is 0)
      weighted_rows2<NV>(ds + i * Tp, ds + (i + 1) * Tp, 1, k, hs, i + 2, dq + i * C3, dq + (i + 1) * C3);
    }
  }
  for (; i < T; ++i) {
    const int64_t n = i + 1;
    row_times_t_n(dyh + i * hs, vt, Tp, hs, (n + 7) / 8, s0);  // dp_ij = dy_i . v_j
    score_grad_row(s0, probs + i * Tp, n, scale, ds + i * Tp, Tp);
    weighted_rows<NV>(ds + i * Tp, 1, k, hs, n, dq + i * C3);  // dq_i = sum_j ds_ij k_j
  }
  // dk_j = sum_{i>=j} ds_ij q_i and dv_j = sum_{i>=j} p_ij dy_i (ds and p are 0 above the diagonal).
  int64_t j = 0;
  if constexpr (NV <= 4) {
    for (; j + 1 < T; j += 2) {
      weighted_rows2<NV>(ds + j * Tp + j, ds + j * Tp + j + 1, Tp, q + j * hs, hs, T - j, dk + j * C3,
                         dk + (j + 1) * C3);
      weighted_rows2<NV>(probs + j * Tp + j, probs + j * Tp + j + 1, Tp, dyh + j * hs, hs, T - j, dv + j * C3,
                         dv + (j + 1) * C3);
    }
  }
  for (; j < T; ++j) {
    weighted_rows<NV>(ds + j * Tp + j, Tp, q + j * hs, hs, T - j, dk + j * C3);
    weighted_rows<NV>(probs + j * Tp + j, Tp, dyh + j * hs, hs, T - j, dv + j * C3);
  }
}

template <int NV>
void forward_chunk(const float* qkv, float* y, float* probs, int64_t T, int64_t C, int64_t nh, float scale,
                   int64_t begin, int64_t end) {
  const int64_t Tp = round_up8(T);
  Scratch scratch(T, 8 * NV);
  for (int64_t bh = begin; bh < end; ++bh) {
    const int64_t b = bh / nh, h = bh % nh;
    forward_head<NV>(qkv + b * T * 3 * C, T, C, h, scale, y + b * T * C, probs ? probs + bh * T * Tp : nullptr,
                     scratch);
  }
}

template <int NV>
void backward_chunk(const float* qkv, const float* probs, const float* dy, float* dqkv, int64_t T, int64_t C,
                    int64_t nh, float scale, int64_t begin, int64_t end) {
  const int64_t Tp = round_up8(T);
  Scratch scratch(T, 8 * NV);
  for (int64_t bh = begin; bh < end; ++bh) {
    const int64_t b = bh / nh, h = bh % nh;
    backward_head<NV>(qkv + b * T * 3 * C, probs + bh * T * Tp, dy + b * T * C, T, C, h, scale, dqkv + b * T * 3 * C,
                      scratch);
  }
}

#define LMZOO_DISPATCH_HEAD_SIZE(hs, fn, ...) \
  switch (hs) {                               \
    case 8: fn<1>(__VA_ARGS__); break;        \
    case 16: fn<2>(__VA_ARGS__); break;       \
    case 32: fn<4>(__VA_ARGS__); break;       \
    case 64: fn<8>(__VA_ARGS__); break;       \
    default: TORCH_CHECK(false, "fused attention: unsupported head size ", hs); \
  }

#endif  // LMZOO_HAVE_X86

// Returns y (B, T, C) and, when keep_probs, the probabilities (B, nh, T, Tp).
std::pair<torch::Tensor, torch::Tensor> attention_forward(const torch::Tensor& qkv_in, int64_t nh, double scale,
                                                          bool keep_probs) {
  TORCH_CHECK(fused_causal_attention_supported(qkv_in, nh), "fused attention: unsupported input");
  const auto qkv = qkv_in.contiguous();
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, hs = C / nh;
  auto y = torch::empty({B, T, C}, qkv.options());  // (B, T, C)
  torch::Tensor probs;
  if (keep_probs) probs = torch::empty({B, nh, T, round_up8(T)}, qkv.options());  // (B, nh, T, Tp)
#ifdef LMZOO_HAVE_X86
  const float* src = qkv.data_ptr<float>();
  float* dst = y.data_ptr<float>();
  float* p = keep_probs ? probs.data_ptr<float>() : nullptr;
  at::parallel_for(0, B * nh, 1, [&](int64_t begin, int64_t end) {
    LMZOO_DISPATCH_HEAD_SIZE(hs, forward_chunk, src, dst, p, T, C, nh, float(scale), begin, end);
  });
#endif
  return {y, probs};
}

torch::Tensor attention_backward(const torch::Tensor& qkv, const torch::Tensor& probs, const torch::Tensor& dy_in,
                                 int64_t nh, double scale) {
  const auto dy = dy_in.contiguous();
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, hs = C / nh;
  auto dqkv = torch::empty_like(qkv);  // (B, T, 3C)
#ifdef LMZOO_HAVE_X86
  const float* src = qkv.data_ptr<float>();
  const float* p = probs.data_ptr<float>();
  const float* g = dy.data_ptr<float>();
  float* dst = dqkv.data_ptr<float>();
  at::parallel_for(0, B * nh, 1, [&](int64_t begin, int64_t end) {
    LMZOO_DISPATCH_HEAD_SIZE(hs, backward_chunk, src, p, g, dst, T, C, nh, float(scale), begin, end);
  });
#endif
  return dqkv;
}

struct FusedCausalAttentionFunction : torch::autograd::Function<FusedCausalAttentionFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv, int64_t n_head,
                               double scale) {
    auto qkv_c = qkv.contiguous();
    auto [y, probs] = attention_forward(qkv_c, n_head, scale, /*keep_probs=*/true);
    ctx->save_for_backward({qkv_c, probs});
    ctx->saved_data["n_head"] = n_head;
    ctx->saved_data["scale"] = scale;
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    auto dqkv = attention_backward(saved[0], saved[1], grads[0], ctx->saved_data["n_head"].toInt(),
                                   ctx->saved_data["scale"].toDouble());
    return {dqkv, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

bool fused_causal_attention_supported(const torch::Tensor& qkv, int64_t n_head) {
  if (!kernels::avx2_enabled() || !qkv.defined() || !qkv.device().is_cpu() ||
      qkv.scalar_type() != torch::kFloat || qkv.dim() != 3 || qkv.size(2) % 3 != 0 || n_head <= 0) {
    return false;
  }
  const int64_t C = qkv.size(2) / 3;
  if (C % n_head != 0) return false;
  const int64_t hs = C / n_head;
  return hs == 8 || hs == 16 || hs == 32 || hs == 64;
}

torch::Tensor fused_causal_attention(const torch::Tensor& qkv, int64_t n_head, double scale) {
  if (torch::GradMode::is_enabled() && qkv.requires_grad()) {
    return FusedCausalAttentionFunction::apply(qkv, n_head, scale);
  }
  return attention_forward(qkv, n_head, scale, /*keep_probs=*/false).first;
}

}  // namespace lmzoo
