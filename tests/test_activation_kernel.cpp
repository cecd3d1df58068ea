// Fused GELU tests: output and gradient equal the erf formula in float64, tails of every length, no-grad path,
// retained graphs.
#include "tests/catch_compat.h"

#include <cmath>

#include "models/kernels/activation_kernel.h"

using namespace lmzoo;

namespace {
// x * Phi(x) and its derivative Phi(x) + x * phi(x), in float64: the reference, independent of any LibTorch release
// (ATen's own float GELU changed its erf approximation between 1.13 and 2.x).
torch::Tensor gelu_f64(const torch::Tensor& x) {
  auto d = x.to(torch::kDouble);
  return d * 0.5 * (1.0 + torch::erf(d / std::sqrt(2.0)));
}
torch::Tensor gelu_grad_f64(const torch::Tensor& x) {
  auto d = x.to(torch::kDouble);
  return 0.5 * (1.0 + torch::erf(d / std::sqrt(2.0))) + d * torch::exp(-0.5 * d * d) / std::sqrt(2.0 * M_PI);
}
// Within a few float ulps of the float64 value (relative 2e-6, absolute 1e-6 near zero).
bool close_to(const torch::Tensor& a, const torch::Tensor& ref64) {
  return torch::allclose(a.to(torch::kDouble), ref64, 2e-6, 1e-6);
}
}  // namespace

TEST_CASE("fused GELU equals the erf formula in output and gradient", "[activation_kernel]") {
  torch::manual_seed(31);
  for (int64_t n : {1, 7, 8, 9, 100, 40000}) {
    auto x = (torch::randn({n}) * 3.0).requires_grad_(true);
    auto y = fused_gelu(x);
    INFO("n " << n);
    CHECK(close_to(y, gelu_f64(x.detach())));
    auto dy = torch::randn_like(y);
    (y * dy).sum().backward();
    CHECK(torch::allclose(x.grad().to(torch::kDouble), dy.to(torch::kDouble) * gelu_grad_f64(x.detach()), 1e-5, 1e-6));
  }
  // Extremes and a 3-D, non-contiguous input.
  auto extremes = torch::tensor({-100.0f, -10.0f, -3.0f, -0.5f, 0.0f, 0.5f, 3.0f, 10.0f, 100.0f});
  CHECK(close_to(fused_gelu(extremes), gelu_f64(extremes)));
  auto wide = torch::randn({4, 6, 5}).transpose(1, 2);
  torch::NoGradGuard no_grad;
  CHECK(close_to(fused_gelu(wide), gelu_f64(wide)));
}

TEST_CASE("fused GELU: a retained graph gives the same gradient on every backward", "[activation_kernel]") {
  // The first backward must not overwrite the stored derivative while the graph is kept.
  torch::manual_seed(32);
  auto x = (torch::randn({3, 50}) * 2.0).requires_grad_(true);
  auto ref_x = x.detach().clone().requires_grad_(true);
  auto dy = torch::randn({3, 50});
  (torch::gelu(ref_x) * dy).sum().backward();
  auto loss = (fused_gelu(x) * dy).sum();
  loss.backward({}, /*retain_graph=*/true);
  auto first = x.grad().clone();
  x.mutable_grad().zero_();
  loss.backward();
  CHECK(torch::allclose(first, ref_x.grad(), 1e-5, 1e-6));
  CHECK(torch::allclose(x.grad(), ref_x.grad(), 1e-5, 1e-6));
}
