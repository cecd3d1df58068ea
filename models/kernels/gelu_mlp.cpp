// The feed-forward as one autograd function whose two GELU-side products take cuBLASLt's epilogues on CUDA
// (models/kernels/cuda/gelu_gemm_cuda.cu) and the same arithmetic in LibTorch ops elsewhere; the switch.
#include "models/kernels/gelu_mlp.h"

#include <atomic>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "lmzoo_build_config.h"
#include "models/kernels/cpu_features.h"
#include "models/torch_compat.h"

#if LMZOO_WITH_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "models/kernels/cuda/gelu_gemm_cuda.h"
#endif

namespace lmzoo {

namespace {

std::atomic<bool> fused_bias_gelu_on{false};
std::atomic<int64_t> epilogue_products{0};
std::mutex refusal_mutex;
std::string first_refusal;  // guarded by refusal_mutex

bool is_floating(torch::ScalarType type) {
  return type == torch::kFloat || type == torch::kBFloat16 || type == torch::kHalf;
}

#if LMZOO_WITH_CUDA_KERNELS
cuda_kernels::ElementType kernel_type(torch::ScalarType type) {
  switch (type) {
    case torch::kFloat: return cuda_kernels::ElementType::kFloat;
    case torch::kBFloat16: return cuda_kernels::ElementType::kBFloat16;
    case torch::kHalf: return cuda_kernels::ElementType::kHalf;
    default: throw std::logic_error("GELU GEMM: no kernel for this dtype");
  }
}

bool tf32_allowed() { return at::globalContext().float32MatmulPrecision() != at::Float32MatmulPrecision::HIGHEST; }

torch::Tensor workspace_on(const torch::Device& device) {
  return torch::empty({int64_t(cuda_kernels::kGeluGemmWorkspaceBytes)},
                      torch::TensorOptions(device).dtype(torch::kByte));
}

void note_refusal(const char* product, const torch::Tensor& a, const torch::Tensor& b) {
  const std::lock_guard<std::mutex> lock(refusal_mutex);
  if (!first_refusal.empty()) return;
  std::ostringstream what;
  what << "cuBLASLt has no " << product << " epilogue kernel for " << a.sizes() << " x " << b.sizes() << " "
       << c10::toString(a.scalar_type());
  first_refusal = what.str();
}
#endif

// Forward's first product: {pre, h} = {x2 w1^T + b1, gelu_tanh(pre)}, in cuBLASLt's epilogue where it runs.
std::pair<torch::Tensor, torch::Tensor> bias_gelu_product(const torch::Tensor& x2, const torch::Tensor& w1,
                                                          const torch::Tensor& b1) {
#if LMZOO_WITH_CUDA_KERNELS
  if (x2.is_cuda() && !kernels::switched_off()) {
    const int64_t rows = x2.size(0), hidden = w1.size(0);
    auto pre = torch::empty({rows, hidden}, x2.options());  // (rows, hidden)
    auto h = torch::empty({rows, hidden}, x2.options());    // (rows, hidden)
    const auto workspace = workspace_on(x2.device());
    const cuda_kernels::GeluGemmForward args{kernel_type(x2.scalar_type()), tf32_allowed(), x2.data_ptr(),
                                             w1.data_ptr(), b1.defined() ? b1.data_ptr() : nullptr, rows,
                                             x2.size(1), hidden, pre.data_ptr(), h.data_ptr()};
    const auto status = cuda_kernels::gelu_gemm_forward(args, workspace.data_ptr(),
                                                        c10::cuda::getCurrentCUDAStream().stream());
    if (status == cuda_kernels::GeluGemmStatus::kDone) {
      ++epilogue_products;
      return {pre, h};
    }
    note_refusal("bias + GELU", x2, w1);
  }
#endif
  auto pre = b1.defined() ? torch::addmm(b1, x2, w1.t()) : torch::mm(x2, w1.t());  // (rows, hidden)
  return {pre, torch::gelu(pre, "tanh")};
}

// Backward's product through c_proj: {dpre, db1} = {(dy w2) * gelu_tanh'(pre), column sums of dpre (when
// want_bias_grad)}, in cuBLASLt's epilogue where it runs.
std::pair<torch::Tensor, torch::Tensor> dgelu_product(const torch::Tensor& dy, const torch::Tensor& w2,
                                                      const torch::Tensor& pre, bool want_bias_grad) {
#if LMZOO_WITH_CUDA_KERNELS
  if (dy.is_cuda() && !kernels::switched_off()) {
    const int64_t rows = pre.size(0), hidden = pre.size(1);
    auto dpre = torch::empty({rows, hidden}, pre.options());                              // (rows, hidden)
    auto db1 = want_bias_grad ? torch::empty({hidden}, pre.options()) : torch::Tensor();  // (hidden)
    const auto workspace = workspace_on(dy.device());
    const cuda_kernels::GeluGemmBackward args{kernel_type(dy.scalar_type()), tf32_allowed(), dy.data_ptr(),
                                              w2.data_ptr(), pre.data_ptr(), rows, dy.size(1), hidden,
                                              dpre.data_ptr(), want_bias_grad ? db1.data_ptr() : nullptr};
    const auto status = cuda_kernels::gelu_gemm_backward(args, workspace.data_ptr(),
                                                         c10::cuda::getCurrentCUDAStream().stream());
    if (status == cuda_kernels::GeluGemmStatus::kDone) {
      ++epilogue_products;
      return {dpre, db1};
    }
    note_refusal("GELU-gradient", dy, w2);
  }
#endif
  const auto dpre = torch::gelu_backward(torch::mm(dy, w2), pre, "tanh");  // (rows, hidden)
  return {dpre, want_bias_grad ? dpre.sum(0) : torch::Tensor()};
}

// Inputs x, fc_weight, fc_bias, proj_weight, proj_bias (a missing bias: an empty tensor, as LibTorch 1.13 takes no
// undefined inputs); all of one dtype. Saves x, both weights, pre and h: what the plain layers would keep.
struct GeluMlpFunction : torch::autograd::Function<GeluMlpFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& fc_weight, const torch::Tensor& fc_bias,
                               const torch::Tensor& proj_weight, const torch::Tensor& proj_bias) {
    const c10::OptionalDeviceGuard guard(x.device());
    // The operands are in one dtype already (gelu_mlp cast them): autocast is kept from casting any result again.
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const int64_t in = x.size(-1), out = proj_weight.size(0);
    const auto x2 = x.reshape({-1, in}).contiguous();  // (rows, in)
    const auto w1 = fc_weight.contiguous(), w2 = proj_weight.contiguous();
    const bool has_fc_bias = fc_bias.numel() > 0, has_proj_bias = proj_bias.numel() > 0;
    const auto [pre, h] = bias_gelu_product(x2, w1, has_fc_bias ? fc_bias.contiguous() : torch::Tensor());
    auto out_sizes = x.sizes().vec();
    out_sizes.back() = out;
    // Allocated in its final shape, not returned as a view, so that callers may add to it in place.
    auto y = torch::empty(out_sizes, h.options());      // (..., out)
    auto y2 = y.view({x2.size(0), out});                // (rows, out)
    if (has_proj_bias) {
      torch::addmm_out(y2, proj_bias, h, w2.t());
    } else {
      torch::mm_out(y2, h, w2.t());
    }
    ctx->save_for_backward({x2, w1, w2, pre, h});
    ctx->saved_data["x_sizes"] = x.sizes().vec();
    ctx->saved_data["has_fc_bias"] = has_fc_bias;
    ctx->saved_data["has_proj_bias"] = has_proj_bias;
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x2 = saved[0], &w1 = saved[1], &w2 = saved[2], &pre = saved[3], &h = saved[4];
    const c10::OptionalDeviceGuard guard(x2.device());
    const bool has_fc_bias = ctx->saved_data["has_fc_bias"].toBool();
    const bool has_proj_bias = ctx->saved_data["has_proj_bias"].toBool();
    const auto dy = grads[0].reshape({-1, w2.size(0)}).to(h.scalar_type()).contiguous();  // (rows, out)
    torch::Tensor dx, dw1, db1, dw2, db2;
    if (ctx->needs_input_grad(3)) dw2 = torch::mm(dy.t(), h);  // (out, hidden)
    if (ctx->needs_input_grad(4) && has_proj_bias) db2 = dy.sum(0);
    if (ctx->needs_input_grad(0) || ctx->needs_input_grad(1) || ctx->needs_input_grad(2)) {
      auto [dpre, fc_bias_grad] = dgelu_product(dy, w2, pre, has_fc_bias && ctx->needs_input_grad(2));
      db1 = fc_bias_grad;
      if (ctx->needs_input_grad(0)) dx = torch::mm(dpre, w1).view(ctx->saved_data["x_sizes"].toIntVector());
      if (ctx->needs_input_grad(1)) dw1 = torch::mm(dpre.t(), x2);  // (hidden, in)
    }
    return {dx, dw1, db1, dw2, db2};
  }
};

}  // namespace

bool fused_bias_gelu_enabled() { return fused_bias_gelu_on.load(); }

FusedBiasGeluScope::FusedBiasGeluScope(bool on) : previous_(fused_bias_gelu_on.exchange(on)) {}

FusedBiasGeluScope::~FusedBiasGeluScope() { fused_bias_gelu_on.store(previous_); }

std::string fused_bias_gelu_unavailable_reason(const torch::Device& device, const ModelConfig& model) {
  if (!device.is_cuda()) return "the device is " + device.str() + ", not a CUDA GPU";
  if (model.activation != Activation::kGeluTanh) {
    return "the activation is " + enum_name(model.activation) + "; cuBLASLt's epilogue computes gelu-tanh";
  }
  if (model.ff_dim() % 8 != 0) {
    return "the feed-forward width " + std::to_string(model.ff_dim()) + " is not a multiple of 8";
  }
  if (!LMZOO_WITH_CUDA_KERNELS) return "this build has no CUDA kernels of lmzoo's own (built without a CUDA compiler)";
  if (kernels::switched_off()) return "LMZOO_KERNELS is off";
  return "";
}

bool fused_bias_gelu_applies(const torch::Tensor& x, const torch::Tensor& fc_weight, const torch::Tensor& fc_bias,
                             const torch::Tensor& proj_weight, const torch::Tensor& proj_bias) {
  if (!LMZOO_WITH_CUDA_KERNELS || !fused_bias_gelu_enabled() || kernels::switched_off() || !x.is_cuda()) return false;
  const bool autocast = compat::is_autocast_enabled(c10::DeviceType::CUDA);
  auto fits = [&](const torch::Tensor& t) {
    return t.device() == x.device() && is_floating(t.scalar_type()) &&
           (autocast || t.scalar_type() == x.scalar_type());
  };
  return x.dim() >= 1 && x.numel() > 0 && fits(x) && fits(fc_weight) && fits(proj_weight) && fc_weight.dim() == 2 &&
         proj_weight.dim() == 2 && fc_weight.size(1) == x.size(-1) && proj_weight.size(1) == fc_weight.size(0) &&
         fc_weight.size(0) % 8 == 0 &&
         (!fc_bias.defined() || (fits(fc_bias) && fc_bias.numel() == fc_weight.size(0))) &&
         (!proj_bias.defined() || (fits(proj_bias) && proj_bias.numel() == proj_weight.size(0)));
}

torch::Tensor gelu_mlp(const torch::Tensor& x, const torch::Tensor& fc_weight, const torch::Tensor& fc_bias,
                       const torch::Tensor& proj_weight, const torch::Tensor& proj_bias) {
  // Under autocast every operand goes to autocast's dtype first (autograd carries the gradients back), as
  // torch::linear's autocast would do; the function itself then computes in one dtype.
  const auto device_type = x.device().type();
  const bool autocast = compat::is_autocast_enabled(device_type);
  const auto dtype = autocast ? compat::autocast_dtype(device_type) : x.scalar_type();
  auto operand = [&](const torch::Tensor& t) {
    if (!t.defined()) return torch::empty({0}, x.options().dtype(dtype));
    return t.scalar_type() == dtype ? t : t.to(dtype);
  };
  return GeluMlpFunction::apply(operand(x), operand(fc_weight), operand(fc_bias), operand(proj_weight),
                                operand(proj_bias));
}

int64_t gelu_mlp_epilogue_products() { return epilogue_products.load(); }

std::string gelu_mlp_first_refusal() {
  const std::lock_guard<std::mutex> lock(refusal_mutex);
  return first_refusal;
}

}  // namespace lmzoo
