// Fused norm tests: LayerNorm's output and gradients of x, gain and bias equal torch::layer_norm;
// RMSNorm's equal the formula in plain ops.
#include "tests/catch_compat.h"

#include "models/kernels/norm_kernel.h"
#include "models/layers/norm.h"

using namespace lmzoo;

TEST_CASE("fused LayerNorm equals torch::layer_norm in output and gradients", "[norm_kernel]") {
  torch::manual_seed(61);
  for (const int64_t C : {8, 32, 128}) {
    for (const bool with_bias : {false, true}) {
      auto x = (torch::randn({3, 5, C}) * 2.0 + 0.5).requires_grad_(true);
      auto w = (torch::randn({C}) * 0.3 + 1.0).requires_grad_(true);
      auto b = with_bias ? torch::randn({C}).requires_grad_(true) : torch::Tensor();
      auto rx = x.detach().clone().requires_grad_(true);
      auto rw = w.detach().clone().requires_grad_(true);
      auto rb = with_bias ? b.detach().clone().requires_grad_(true) : torch::Tensor();
      auto y = fused_layer_norm(x, w, b, 1e-5);
      auto ref = torch::layer_norm(rx, {C}, rw, rb, 1e-5);
      INFO("C " << C << ", bias " << with_bias);
      CHECK(torch::allclose(y, ref, 1e-5, 1e-5));
      auto dy = torch::randn_like(ref);
      (y * dy).sum().backward();
      (ref * dy).sum().backward();
      CHECK(torch::allclose(x.grad(), rx.grad(), 1e-4, 1e-5));
      CHECK(torch::allclose(w.grad(), rw.grad(), 1e-4, 1e-5));
      if (with_bias) CHECK(torch::allclose(b.grad(), rb.grad(), 1e-5, 1e-5));
    }
  }
  // A size the kernel does not take (not a multiple of 8) goes to torch::layer_norm.
  auto x = torch::randn({4, 6});
  auto w = torch::ones({6});
  CHECK(torch::allclose(fused_layer_norm(x, w, torch::Tensor(), 1e-5), torch::layer_norm(x, {6}, w, {}, 1e-5)));
}

TEST_CASE("fused RMSNorm equals x * rsqrt(mean(x^2) + eps) * w in output and gradients", "[norm_kernel]") {
  torch::manual_seed(62);
  for (const int64_t C : {8, 32, 128}) {
    auto x = (torch::randn({3, 5, C}) * 2.0 + 0.5).requires_grad_(true);
    auto w = (torch::randn({C}) * 0.3 + 1.0).requires_grad_(true);
    auto rx = x.detach().clone().requires_grad_(true);
    auto rw = w.detach().clone().requires_grad_(true);
    auto y = fused_rms_norm(x, w, 1e-6);
    auto ref = rx * torch::rsqrt(rx.pow(2).mean(-1, true) + 1e-6) * rw;
    INFO("C " << C);
    CHECK(torch::allclose(y, ref, 1e-5, 1e-5));
    auto dy = torch::randn_like(ref);
    (y * dy).sum().backward();
    (ref * dy).sum().backward();
    CHECK(torch::allclose(x.grad(), rx.grad(), 1e-4, 1e-5));
    CHECK(torch::allclose(w.grad(), rw.grad(), 1e-4, 1e-5));
  }
  auto x = torch::randn({4, 6});  // not a multiple of 8: plain ops
  auto w = torch::randn({6});
  CHECK(torch::allclose(fused_rms_norm(x, w, 1e-6), x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-6) * w));
}

TEST_CASE("a norm layer takes a bf16 input in its parameters' precision", "[norm_kernel]") {
  torch::manual_seed(63);
  for (const auto& entry : EnumTable<NormKind>::entries) {
    const NormKind kind = entry.value;
    Norm norm(16, kind, /*bias=*/true, 1e-5);
    auto x = torch::randn({2, 3, 16}).to(torch::kBFloat16);  // e.g. a linear layer's output under autocast
    auto y = norm(x);
    INFO(kind);
    CHECK(y.scalar_type() == torch::kFloat);
    CHECK(torch::allclose(y, norm(x.to(torch::kFloat)), 0, 0));
  }
}
