// Fused cross-entropy tests: loss and gradient equal torch's cross_entropy, with ignored targets.
#include "tests/catch_compat.h"

#include "models/kernels/cross_entropy_kernel.h"

using namespace lmzoo;

TEST_CASE("fused cross-entropy equals cross_entropy in loss and gradient", "[cross_entropy_kernel]") {
  torch::manual_seed(41);
  for (int64_t V : {1, 7, 8, 99, 434}) {
    const int64_t N = 37;
    auto logits = (torch::randn({N, V}) * 4.0).requires_grad_(true);
    auto targets = torch::randint(0, V, {N}, torch::kLong);
    targets[3] = -1;  // ignored rows
    targets[20] = -1;
    auto ref_logits = logits.detach().clone().requires_grad_(true);
    auto loss = fused_cross_entropy(logits, targets, -1);
    auto ref = torch::nn::functional::cross_entropy(
        ref_logits, targets, torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-1));
    INFO("V " << V);
    CHECK(loss.item<double>() == Approx(ref.item<double>()).epsilon(1e-5));
    (loss * 0.7).backward();
    (ref * 0.7).backward();
    CHECK(torch::allclose(logits.grad(), ref_logits.grad(), 1e-5, 1e-7));
  }
}

TEST_CASE("fused cross-entropy rejects out-of-range targets", "[cross_entropy_kernel]") {
  auto logits = torch::randn({4, 5});
  CHECK_THROWS(fused_cross_entropy(logits, torch::tensor({0, 1, 5, 2}, torch::kLong), -1));
}

// As torch's: a NaN logit makes its row's loss (and so the mean) NaN, whatever its position in the SIMD lanes.
TEST_CASE("fused cross-entropy propagates a NaN logit", "[cross_entropy_kernel][nonfinite]") {
  for (int64_t column : {0, 5, 8, 30}) {
    auto logits = torch::randn({3, 33});
    logits[1][column] = NAN;
    const auto targets = torch::tensor({0, 1, 2}, torch::kLong);
    INFO("column " << column);
    CHECK(std::isnan(fused_cross_entropy(logits, targets, -1).item<float>()));
    CHECK(std::isnan(torch::nn::functional::cross_entropy(logits, targets).item<float>()));
  }
}
