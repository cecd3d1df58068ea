// Frozen low-precision linear: the weight is widened to the input's dtype for each product and let go at once.
#include "models/kernels/low_precision_linear.h"

#include "models/kernels/linear_kernel.h"

namespace lmzoo {

namespace {

struct LowPrecisionLinearFunction : torch::autograd::Function<LowPrecisionLinearFunction> {
  // row_scale: (N) or an empty tensor (a bf16 weight); a custom Function's inputs must be defined in LibTorch 1.13.
  // An int8 weight's scales multiply the product, not the widened weight: one (N, K) temporary, not two.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& row_scale) {
    ctx->save_for_backward({weight, row_scale});  // the stored (low-precision) tensors: no new memory
    auto y = torch::matmul(x, weight.to(x.scalar_type()).t());  // (..., N)
    return row_scale.numel() ? y * row_scale.to(y.scalar_type()) : y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &weight = saved[0], &row_scale = saved[1];  // (N, K), (N) or empty
    const auto dtype = grads[0].scalar_type();
    const auto dy = row_scale.numel() ? grads[0] * row_scale.to(dtype) : grads[0];  // (..., N)
    return {torch::matmul(dy, weight.to(dtype)), {}, {}};  // (..., K); none for the frozen W and its scales
  }
};

}  // namespace

torch::Tensor low_precision_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                                   const torch::Tensor& row_scale) {
  TORCH_CHECK(!weight.requires_grad(), "a low-precision weight must be frozen");
  const auto scale = row_scale.defined() ? row_scale : torch::empty({0}, x.options());
  auto y = LowPrecisionLinearFunction::apply(x, weight, scale);
  return bias.defined() ? y + bias.to(y.scalar_type()) : y;
}

namespace {

// Rows W (n, K) fp32 -> (int8 rows (n, K), scales (n)): symmetric, max |row| / 127; an all-zero row gets scale 1.
// One fp32 temporary of W's size at a time (rounded and clamped in place): the peak while a base is lowered.
std::pair<torch::Tensor, torch::Tensor> quantize_rows(const torch::Tensor& w) {
  auto scale = std::get<0>(w.abs().max(/*dim=*/1)) / 127.0;  // (n)
  scale = torch::where(scale > 0, scale, torch::ones_like(scale));
  auto steps = w / scale.unsqueeze(1);  // (n, K)
  steps.round_().clamp_(-127, 127);
  return {steps.to(torch::kChar), scale};
}

torch::Tensor weight_scale(const torch::nn::Linear& layer) {
  const auto buffers = layer->named_buffers(/*recurse=*/false);
  const torch::Tensor* scale = buffers.find(kWeightScaleBuffer);
  TORCH_CHECK(scale != nullptr, "an int8 weight without its ", kWeightScaleBuffer);
  return *scale;
}

}  // namespace

void quantize_frozen_weight_int8(const torch::nn::Linear& layer) {
  auto& weight = layer->weight;
  if (weight.requires_grad() || weight.scalar_type() == torch::kChar) return;
  torch::NoGradGuard no_grad;
  auto [q, scale] = quantize_rows(weight.to(torch::kFloat));
  weight.set_data(q);
  layer.ptr()->register_buffer(kWeightScaleBuffer, scale);
}

void add_to_weight_rows(const torch::nn::Linear& layer, int64_t row_offset, const torch::Tensor& delta) {
  torch::NoGradGuard no_grad;
  auto rows = layer->weight.narrow(0, row_offset, delta.size(0));  // (n, K)
  if (rows.scalar_type() != torch::kChar) {
    rows.copy_(rows.to(torch::kFloat) + delta.to(torch::kFloat));
    return;
  }
  auto scales = weight_scale(layer).narrow(0, row_offset, delta.size(0));  // (n)
  auto [q, scale] = quantize_rows(rows.to(torch::kFloat) * scales.unsqueeze(1) + delta.to(torch::kFloat));
  rows.copy_(q);
  scales.copy_(scale);
}

torch::Tensor apply_linear(const torch::Tensor& x, const torch::nn::Linear& layer) {
  const auto& weight = layer->weight;
  if (weight.scalar_type() == torch::kChar) return low_precision_linear(x, weight, layer->bias, weight_scale(layer));
  return fast_linear(x, weight, layer->bias);
}

}  // namespace lmzoo
