// Fused causal attention kernel tests: outputs and gradients equal plain LibTorch ops, causal-mask detection.
#include "tests/catch_compat.h"

#include <cmath>
#include <limits>

#include "models/kernels/attention_kernel.h"

using namespace lmzoo;

namespace {

// The plain implementation, as models/layers/attention.cpp writes it. qkv: (B, T, 3C) -> (B, T, C).
torch::Tensor plain_causal_attention(const torch::Tensor& qkv, int64_t nh, double scale) {
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, hs = C / nh;
  auto parts = qkv.chunk(3, -1);                                    // 3 x (B, T, C)
  auto q = parts[0].view({B, T, nh, hs}).transpose(1, 2);           // (B, nh, T, hs)
  auto k = parts[1].view({B, T, nh, hs}).transpose(1, 2);           // (B, nh, T, hs)
  auto v = parts[2].view({B, T, nh, hs}).transpose(1, 2);           // (B, nh, T, hs)
  auto blocked = torch::ones({T, T}, torch::kBool).triu(1);         // (T, T)
  auto att = torch::matmul(q, k.transpose(-2, -1)) * scale;         // (B, nh, T, T)
  att = torch::softmax(att.masked_fill(blocked, -std::numeric_limits<float>::infinity()), -1);
  return torch::matmul(att, v).transpose(1, 2).reshape({B, T, C});  // (B, T, C)
}

}  // namespace

TEST_CASE("fused causal attention equals plain ops in output and gradient", "[attention_kernel]") {
  torch::manual_seed(11);
  for (int64_t hs : {8, 16, 32, 64}) {
    for (int64_t T : {1, 5, 8, 13, 64, 70}) {
      const int64_t B = 2, nh = 3, C = nh * hs;
      auto qkv = (torch::randn({B, T, 3 * C}) * 2.0).requires_grad_(true);
      if (!fused_causal_attention_supported(qkv, nh)) {
        WARN("fused attention unsupported on this CPU; skipped");
        return;
      }
      const double scale = 1.0 / std::sqrt(double(hs));
      auto ref_qkv = qkv.detach().clone().requires_grad_(true);
      auto y = fused_causal_attention(qkv, nh, scale);
      auto ref = plain_causal_attention(ref_qkv, nh, scale);
      INFO("hs " << hs << ", T " << T);
      REQUIRE(y.sizes() == ref.sizes());
      CHECK(torch::allclose(y, ref, 1e-5, 1e-5));
      auto dy = torch::randn_like(ref);
      (y * dy).sum().backward();
      (ref * dy).sum().backward();
      CHECK(torch::allclose(qkv.grad(), ref_qkv.grad(), 1e-4, 1e-5));
    }
  }
}

TEST_CASE("fused causal attention: no-grad path and non-contiguous input", "[attention_kernel]") {
  torch::manual_seed(12);
  const int64_t B = 3, T = 10, nh = 4, hs = 8, C = nh * hs;
  auto wide = torch::randn({B, 3 * C, T});  // transposed storage: qkv is non-contiguous
  auto qkv = wide.transpose(1, 2);          // (B, T, 3C)
  if (!fused_causal_attention_supported(qkv, nh)) return;
  torch::NoGradGuard no_grad;
  auto y = fused_causal_attention(qkv, nh, 0.3);
  CHECK(torch::allclose(y, plain_causal_attention(qkv, nh, 0.3), 1e-5, 1e-5));
}

