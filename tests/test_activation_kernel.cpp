// Fused GELU tests: output and gradient equal torch::gelu (erf form), tails of every length, no-grad path.
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
