// Residual add + norm: the process-wide switch, and the autograd function over lmzoo's CUDA kernels
// (models/kernels/cuda/add_norm_cuda.cu) in builds that compile them.
#include "models/kernels/add_norm.h"

#include <atomic>
#include <stdexcept>

#include "lmzoo_build_config.h"
#include "models/kernels/cpu_features.h"

#if LMZOO_WITH_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "models/kernels/cuda/add_norm_cuda.h"
#endif

namespace lmzoo {

namespace {

std::atomic<bool> fused_add_norm_on{false};

#if LMZOO_WITH_CUDA_KERNELS
bool kernel_type(torch::ScalarType type, cuda_kernels::ElementType* out) {
  switch (type) {
    case torch::kFloat: *out = cuda_kernels::ElementType::kFloat; return true;
    case torch::kBFloat16: *out = cuda_kernels::ElementType::kBFloat16; return true;
    case torch::kHalf: *out = cuda_kernels::ElementType::kHalf; return true;
    default: return false;
  }
}

cuda_kernels::ElementType kernel_type(torch::ScalarType type) {
  cuda_kernels::ElementType out = cuda_kernels::ElementType::kFloat;
  if (!kernel_type(type, &out)) throw std::logic_error("fused add + norm: no kernel for this dtype");
  return out;
}

void check_launch(const char* error, const char* what) {
  if (error != nullptr) throw std::runtime_error(std::string("fused add + norm ") + what + ": " + error);
}

// Inputs x, out, weight, bias (an empty tensor when the norm has none); outputs {sum, normed}.
struct FusedAddNormFunction : torch::autograd::Function<FusedAddNormFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_in,
                                                const torch::Tensor& out_in, const torch::Tensor& weight_in,
                                                const torch::Tensor& bias_in, double eps, bool rms) {
    const c10::cuda::CUDAGuard guard(x_in.device());
    const auto x = x_in.contiguous(), out = out_in.contiguous(), weight = weight_in.contiguous();
    const bool has_bias = bias_in.numel() > 0;
    const auto bias = has_bias ? bias_in.contiguous() : bias_in;
    const int64_t columns = weight.size(0), rows = x.numel() / columns;
    auto sum = torch::empty_like(x);
    auto normed = torch::empty(x.sizes(), x.options().dtype(weight.scalar_type()));
    auto mean = torch::empty({rows}, x.options().dtype(torch::kFloat));  // (rows)
    auto rstd = torch::empty({rows}, x.options().dtype(torch::kFloat));  // (rows)
    cuda_kernels::AddNormForward args{kernel_type(x.scalar_type()), kernel_type(out.scalar_type()),
                                      kernel_type(weight.scalar_type()), x.data_ptr(), out.data_ptr(),
                                      weight.data_ptr(), has_bias ? bias.data_ptr() : nullptr, rows, columns,
                                      float(eps), rms, sum.data_ptr(), normed.data_ptr(),
                                      mean.data_ptr<float>(), rstd.data_ptr<float>()};
    check_launch(cuda_kernels::add_norm_forward(args, c10::cuda::getCurrentCUDAStream().stream()), "forward");
    ctx->save_for_backward({sum, weight, mean, rstd});
    ctx->saved_data["rms"] = rms;
    ctx->saved_data["has_bias"] = has_bias;
    ctx->saved_data["out_dtype"] = static_cast<int64_t>(out.scalar_type());
    return {sum, normed};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &sum = saved[0], &weight = saved[1], &mean = saved[2], &rstd = saved[3];
    const bool rms = ctx->saved_data["rms"].toBool(), has_bias = ctx->saved_data["has_bias"].toBool();
    const auto out_dtype = static_cast<torch::ScalarType>(ctx->saved_data["out_dtype"].toInt());
    const c10::cuda::CUDAGuard guard(sum.device());
    const auto dsum = grads[0].defined() ? grads[0].to(sum.scalar_type()).contiguous() : grads[0];
    if (!grads[1].defined()) {  // only the sum was used: its gradient passes to x and out
      return {dsum, dsum.to(out_dtype), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
    const auto dy = grads[1].to(weight.scalar_type()).contiguous();
    const int64_t columns = weight.size(0), rows = sum.numel() / columns;
    const int64_t blocks = cuda_kernels::add_norm_backward_blocks(rows);
    auto dx = torch::empty_like(sum);
    auto dgamma_partial = torch::empty({blocks, columns}, sum.options().dtype(torch::kFloat));  // (blocks, C)
    auto dbeta_partial = torch::empty({blocks, columns}, sum.options().dtype(torch::kFloat));   // (blocks, C)
    cuda_kernels::AddNormBackward args{kernel_type(sum.scalar_type()), kernel_type(weight.scalar_type()),
                                       dy.data_ptr(), dsum.defined() ? dsum.data_ptr() : nullptr, sum.data_ptr(),
                                       weight.data_ptr(), mean.data_ptr<float>(), rstd.data_ptr<float>(), rows,
                                       columns, blocks, rms, dx.data_ptr(), dgamma_partial.data_ptr<float>(),
                                       dbeta_partial.data_ptr<float>()};
    check_launch(cuda_kernels::add_norm_backward(args, c10::cuda::getCurrentCUDAStream().stream()), "backward");
    const auto dgamma = dgamma_partial.sum(0).to(weight.scalar_type());  // (C)
    const auto dbeta = has_bias ? dbeta_partial.sum(0).to(weight.scalar_type()) : torch::Tensor();
    return {dx, dx.to(out_dtype), dgamma, dbeta, torch::Tensor(), torch::Tensor()};
  }
};
#endif

}  // namespace

bool fused_add_norm_enabled() { return fused_add_norm_on.load(); }

FusedAddNormScope::FusedAddNormScope(bool on) : previous_(fused_add_norm_on.exchange(on)) {}

FusedAddNormScope::~FusedAddNormScope() { fused_add_norm_on.store(previous_); }

std::string fused_add_norm_unavailable_reason(const torch::Device& device) {
  if (!device.is_cuda()) return "the device is " + device.str() + ", not a CUDA GPU";
#if LMZOO_WITH_CUDA_KERNELS
  if (kernels::switched_off()) return "LMZOO_KERNELS is off";
  return "";
#else
  return "this build has no CUDA kernels of lmzoo's own (built without a CUDA compiler)";
#endif
}

bool fused_add_norm_applies(const torch::Tensor& x, const torch::Tensor& out, const torch::Tensor& weight,
                            const torch::Tensor& bias) {
#if LMZOO_WITH_CUDA_KERNELS
  if (!fused_add_norm_enabled() || kernels::switched_off() || !x.is_cuda()) return false;
  cuda_kernels::ElementType type;
  const auto x_dtype = x.scalar_type(), w_dtype = weight.scalar_type();
  return out.device() == x.device() && weight.device() == x.device() && x.sizes() == out.sizes() &&
         kernel_type(x_dtype, &type) && kernel_type(out.scalar_type(), &type) &&
         torch::promote_types(x_dtype, out.scalar_type()) == x_dtype &&
         (w_dtype == torch::kFloat || w_dtype == x_dtype) && weight.dim() == 1 && x.dim() >= 1 &&
         x.size(-1) == weight.size(0) && weight.size(0) > 0 &&
         weight.size(0) <= cuda_kernels::kAddNormMaxColumns &&
         (!bias.defined() || (bias.scalar_type() == w_dtype && bias.sizes() == weight.sizes() &&
                              bias.device() == x.device()));
#else
  (void)x, (void)out, (void)weight, (void)bias;
  return false;
#endif
}

SumAndNorm fused_add_norm(const torch::Tensor& x, const torch::Tensor& out, const torch::Tensor& weight,
                          const torch::Tensor& bias, double eps, bool rms) {
#if LMZOO_WITH_CUDA_KERNELS
  const auto bias_or_empty = bias.defined() ? bias : torch::empty({0}, weight.options());
  auto outputs = FusedAddNormFunction::apply(x, out, weight, bias_or_empty, eps, rms);
  return {outputs[0], outputs[1]};
#else
  (void)x, (void)out, (void)weight, (void)bias, (void)eps, (void)rms;
  throw std::logic_error("fused add + norm: this build has no CUDA kernels");
#endif
}

}  // namespace lmzoo
