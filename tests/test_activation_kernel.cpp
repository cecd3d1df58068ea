// Fused GELU tests: output and gradient equal torch::gelu (erf form), tails of every length, no-grad path,
// retained graphs.
#include <catch2/catch.hpp>

#include "models/layers/activation_kernel.h"

using namespace lmzoo;

TEST_CASE("fused GELU equals torch::gelu in output and gradient", "[activation_kernel]") {
  torch::manual_seed(31);
  for (int64_t n : {1, 7, 8, 9, 100, 40000}) {
    auto x = (torch::randn({n}) * 3.0).requires_grad_(true);
    auto ref_x = x.detach().clone().requires_grad_(true);
    auto y = fused_gelu(x);
    auto ref = torch::gelu(ref_x);
    INFO("n " << n);
    CHECK(torch::allclose(y, ref, 1e-6, 1e-6));
    auto dy = torch::randn_like(ref);
    (y * dy).sum().backward();
    (ref * dy).sum().backward();
    CHECK(torch::allclose(x.grad(), ref_x.grad(), 1e-5, 1e-6));
  }
  // Extremes and a 3-D, non-contiguous input.
  auto extremes = torch::tensor({-100.0f, -10.0f, -3.0f, -0.5f, 0.0f, 0.5f, 3.0f, 10.0f, 100.0f});
  CHECK(torch::allclose(fused_gelu(extremes), torch::gelu(extremes), 1e-6, 1e-6));
  auto wide = torch::randn({4, 6, 5}).transpose(1, 2);
  torch::NoGradGuard no_grad;
  CHECK(torch::allclose(fused_gelu(wide), torch::gelu(wide), 1e-6, 1e-6));
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
