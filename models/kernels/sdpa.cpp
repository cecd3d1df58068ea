// The SDPA call: lmzoo's "blocked" (true = masked) becomes SDPA's boolean mask (true = may attend) on a CPU, or an
// additive float mask holding the position bias and -inf where blocked.
#include "models/kernels/sdpa.h"

#include <limits>
#include <vector>

#include "models/kernels/cpu_features.h"
#include "models/torch_compat.h"

namespace lmzoo {

bool sdpa_preferred(const torch::Tensor& q) {
#if LMZOO_HAS_SDPA
  return !kernels::switched_off() && q.is_cuda();
#else
  (void)q;
  return false;
#endif
}

#if LMZOO_HAS_SDPA
namespace {

// The additive float mask (bias, -inf where blocked) in the query's dtype, broadcast shape (.., T, S). On CUDA its
// rows start at multiples of 16 elements (allocated with S rounded up, then narrowed), as the memory-efficient
// kernel needs; an unaligned mask would be copied inside SDPA with a warning.
torch::Tensor additive_mask(const torch::Tensor& blocked, const torch::Tensor& position_bias, const torch::Tensor& q) {
  std::vector<int64_t> sizes = position_bias.defined() ? position_bias.sizes().vec() : blocked.sizes().vec();
  if (position_bias.defined() && blocked.defined()) sizes = at::infer_size(position_bias.sizes(), blocked.sizes());
  const int64_t S = sizes.back();
  auto padded = sizes;
  if (q.is_cuda()) padded.back() = (S + 15) / 16 * 16;
  auto mask = torch::zeros(padded, q.options().requires_grad(false)).narrow(-1, 0, S);  // (.., T, S)
  if (position_bias.defined()) mask.copy_(position_bias.expand(sizes));
  if (blocked.defined()) mask.masked_fill_(blocked.expand(sizes), -std::numeric_limits<float>::infinity());
  return mask;
}

}  // namespace
#endif

torch::Tensor sdpa(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& blocked,
                   bool causal, const torch::Tensor& position_bias, double dropout_p, double scale) {
#if LMZOO_HAS_SDPA
  const bool is_causal = causal && q.size(2) == k.size(2) && !position_bias.defined();
  c10::optional<torch::Tensor> attn_mask;
  if (!is_causal && (position_bias.defined() || blocked.defined())) {
    // A boolean mask alone stays boolean on the CPU (SDPA's own fast path); on CUDA it becomes the aligned float mask.
    attn_mask = position_bias.defined() || q.is_cuda() ? additive_mask(blocked, position_bias, q) : blocked.logical_not();
  }
  return at::scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale);  // (B, nh, T, hs)
#else
  (void)q, (void)k, (void)v, (void)blocked, (void)causal, (void)position_bias, (void)dropout_p, (void)scale;
  TORCH_CHECK(false, "scaled_dot_product_attention needs LibTorch 2.1 or later");
  return {};
#endif
}

}  // namespace lmzoo
