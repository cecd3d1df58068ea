// Frozen low-precision linear: the weight is widened to the input's dtype for each product and let go at once.
#include "models/kernels/low_precision_linear.h"

namespace lmzoo {

namespace {

struct LowPrecisionLinearFunction : torch::autograd::Function<LowPrecisionLinearFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight) {
    ctx->save_for_backward({weight});  // the stored (low-precision) tensor: no new memory
    return torch::matmul(x, weight.to(x.scalar_type()).t());  // (..., N)
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto weight = ctx->get_saved_variables()[0];                        // (N, K)
    return {torch::matmul(grads[0], weight.to(grads[0].scalar_type())), {}};  // (..., K); none for the frozen W
  }
};

}  // namespace

torch::Tensor low_precision_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  TORCH_CHECK(!weight.requires_grad(), "a low-precision weight must be frozen");
  auto y = LowPrecisionLinearFunction::apply(x, weight);
  return bias.defined() ? y + bias.to(y.scalar_type()) : y;
}

}  // namespace lmzoo
