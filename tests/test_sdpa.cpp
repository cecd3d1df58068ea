// at::scaled_dot_product_attention behind lmzoo's masks equals the plain formula (CPU here; CUDA in test_cuda.cpp):
// causal flag, boolean pad masks, additive position bias with a mask, dropout off. LibTorch >= 2.1 only.
#include "tests/catch_compat.h"

#include <limits>

#include "models/kernels/sdpa.h"
#include "models/torch_compat.h"

#if LMZOO_HAS_SDPA
using namespace lmzoo;

namespace {

// softmax(scale q k^T + bias, -inf where blocked) v in plain ops, in float64.
torch::Tensor plain_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                              const torch::Tensor& blocked, const torch::Tensor& bias, double scale) {
  auto att = torch::matmul(q.to(torch::kDouble), k.to(torch::kDouble).transpose(-2, -1)) * scale;  // (B, nh, T, S)
  if (bias.defined()) att = att + bias.to(torch::kDouble);
  if (blocked.defined()) att = att.masked_fill(blocked, -std::numeric_limits<double>::infinity());
  return torch::matmul(torch::softmax(att, -1), v.to(torch::kDouble)).to(q.scalar_type());  // (B, nh, T, hs)
}

}  // namespace

TEST_CASE("sdpa equals plain attention for causal, padded and biased masks", "[sdpa]") {
  torch::manual_seed(41);
  const int64_t B = 2, nh = 3, T = 7, hs = 8;
  auto q = torch::randn({B, nh, T, hs}), k = torch::randn({B, nh, T, hs}), v = torch::randn({B, nh, T, hs});
  auto causal = torch::ones({T, T}, torch::kBool).triu(1);  // (T, T)
  const double scale = 1.0 / std::sqrt(double(hs));
  SECTION("causal flag") {
    CHECK(torch::allclose(sdpa(q, k, v, causal, true, {}, 0.0, scale), plain_attention(q, k, v, causal, {}, scale),
                          1e-5, 1e-5));
  }
  SECTION("pad keys, no causality") {
    auto pads = torch::zeros({B, 1, 1, T}, torch::kBool);
    pads.index_put_({1, 0, 0, torch::indexing::Slice(4, T)}, true);  // (B, 1, 1, T)
    CHECK(torch::allclose(sdpa(q, k, v, pads, false, {}, 0.0, scale), plain_attention(q, k, v, pads, {}, scale),
                          1e-5, 1e-5));
  }
  SECTION("position bias with the causal mask, unit scale (T5)") {
    auto bias = torch::randn({1, nh, T, T});
    CHECK(torch::allclose(sdpa(q, k, v, causal, true, bias, 0.0, 1.0), plain_attention(q, k, v, causal, bias, 1.0),
                          1e-5, 1e-5));
  }
  SECTION("gradients reach q, k, v and the bias") {
    auto bias = torch::randn({1, nh, T, T}).requires_grad_(true);
    auto q1 = q.clone().requires_grad_(true), k1 = k.clone().requires_grad_(true), v1 = v.clone().requires_grad_(true);
    sdpa(q1, k1, v1, causal, true, bias, 0.0, scale).pow(2).sum().backward();
    auto bias2 = bias.detach().clone().requires_grad_(true);
    auto q2 = q.clone().requires_grad_(true), k2 = k.clone().requires_grad_(true), v2 = v.clone().requires_grad_(true);
    plain_attention(q2, k2, v2, causal, bias2, scale).pow(2).sum().backward();
    for (auto [a, b] : {std::pair{q1, q2}, {k1, k2}, {v1, v2}, {bias, bias2}}) {
      CHECK(torch::allclose(a.grad(), b.grad(), 1e-4, 1e-5));
    }
  }
}
#endif
