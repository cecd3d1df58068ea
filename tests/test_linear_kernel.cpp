// fast_linear tests: output and gradients of x, weight and bias equal torch::linear.
#include "tests/catch_compat.h"

#include "models/kernels/linear_kernel.h"

using namespace lmzoo;

TEST_CASE("fast_linear equals torch::linear in output and gradients", "[linear_kernel]") {
  torch::manual_seed(51);
  for (const bool with_bias : {false, true}) {
    auto x = torch::randn({3, 7, 24}).requires_grad_(true);
    auto w = torch::randn({19, 24}).requires_grad_(true);
    auto b = with_bias ? torch::randn({19}).requires_grad_(true) : torch::Tensor();
    auto rx = x.detach().clone().requires_grad_(true);
    auto rw = w.detach().clone().requires_grad_(true);
    auto rb = with_bias ? b.detach().clone().requires_grad_(true) : torch::Tensor();
    auto y = fast_linear(x, w, b);
    auto ref = torch::linear(rx, rw, rb);
    INFO("bias " << with_bias << ", oneDNN " << fast_linear_supported(x, w));
    REQUIRE(y.sizes() == ref.sizes());
    CHECK(torch::allclose(y, ref, 1e-5, 1e-5));
    auto dy = torch::randn_like(ref);
    (y * dy).sum().backward();
    (ref * dy).sum().backward();
    CHECK(torch::allclose(x.grad(), rx.grad(), 1e-5, 1e-5));
    CHECK(torch::allclose(w.grad(), rw.grad(), 1e-5, 1e-5));
    if (with_bias) CHECK(torch::allclose(b.grad(), rb.grad(), 1e-5, 1e-5));
  }
  // Only the weight requires a gradient (as for a frozen input), and a non-contiguous input.
  auto w = torch::randn({5, 6}).requires_grad_(true);
  auto x = torch::randn({6, 4}).t();
  auto y = fast_linear(x, w);
  CHECK(torch::allclose(y, torch::linear(x, w.detach()), 1e-5, 1e-5));
  y.sum().backward();
  CHECK(torch::allclose(w.grad(), torch::ones({4, 5}).t().mm(x), 1e-5, 1e-5));
}
