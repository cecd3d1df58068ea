// Clip + AdamW over all parameters at once: per-tensor norms from at::_foreach_norm, one global norm on the
// device, and at::_fused_adamw_ per group with the clip coefficient passed as its grad_scale (grads are divided
// by it inside the kernel) and found_inf set when the norm is not finite (the kernel then skips the update),
// so no value travels back to the host. LibTorch >= 2.1; CPU tensors from 2.4.
#include <vector>

#include "models/kernels/fused_adamw.h"
#include "models/torch_compat.h"

namespace lmzoo {

bool multi_tensor_adamw_supported(torch::optim::AdamW& optimizer, const std::vector<torch::Tensor>& norm_of) {
#if LMZOO_HAS_FUSED_ADAMW
  c10::optional<torch::Device> device;
  for (const auto& g : norm_of) {
    if (g.is_sparse() || (device && *device != g.device())) return false;
    device = g.device();
  }
  for (auto& group : optimizer.param_groups()) {
    if (static_cast<torch::optim::AdamWOptions&>(group.options()).amsgrad()) return false;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const auto& g = p.grad();
      if (p.is_sparse() || g.is_sparse() || g.scalar_type() != p.scalar_type() || g.device() != p.device()) return false;
      if (p.scalar_type() != torch::kFloat && p.scalar_type() != torch::kBFloat16 && p.scalar_type() != torch::kHalf) {
        return false;
      }
      if (device && *device != p.device()) return false;
      device = p.device();
    }
  }
  if (!device) return false;
  return device->is_cuda() || (device->is_cpu() && LMZOO_TORCH_AT_LEAST(2, 4));
#else
  (void)optimizer, (void)norm_of;
  return false;
#endif
}

namespace {

// Both paths: the host's lr and counters (device_inputs null) or those of device_inputs.
AdamWStepResult clip_and_adamw(torch::optim::AdamW& optimizer, double max_norm, const torch::Tensor& loss_scale,
                               const torch::Tensor& uncounted, const std::vector<torch::Tensor>& norm_of,
                               const DeviceAdamWInputs* device_inputs) {
#if LMZOO_HAS_FUSED_ADAMW
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> all_grads = gradients_for_norm(optimizer, norm_of);
  TORCH_CHECK(!all_grads.empty(), "no parameter has a gradient");
  const auto device = all_grads.front().device();
  const auto on_device = torch::TensorOptions().dtype(torch::kFloat).device(device);
  auto norms = at::_foreach_norm(all_grads, 2);
  for (auto& n : norms) n = n.to(torch::kFloat);
  torch::Tensor norm = torch::stack(norms).norm();  // sqrt of the sum of squared per-tensor norms
  // The kernel divides the gradients by grad_scale: the loss scale, times the clip's reciprocal
  // (clip_grad_norm_ multiplies by min(1, max / (norm + 1e-6))).
  const torch::Tensor scale = loss_scale.defined() ? loss_scale.to(on_device) : torch::ones({}, on_device);
  norm = norm / scale;
  const torch::Tensor found_inf = torch::logical_not(torch::isfinite(norm)).to(torch::kFloat);
  const torch::Tensor grad_scale = max_norm > 0 ? scale * ((norm + 1e-6) / max_norm).clamp_min(1.0) : scale;
  // Steps skipped on the device are still in the counters until the caller takes them back.
  const torch::Tensor not_counted = uncounted.defined() ? uncounted.to(on_device) : torch::zeros({}, on_device);
  size_t group_index = 0;
  for (auto& group : optimizer.param_groups()) {
    const auto& o = static_cast<torch::optim::AdamWOptions&>(group.options());
    const size_t g = group_index++;
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
    std::vector<float> steps;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& s = adamw_state_for(optimizer, p);
      if (s.exp_avg().options().dtype() != p.options().dtype() || s.exp_avg().device() != p.device()) {
        s.exp_avg(s.exp_avg().to(p.options()).contiguous());
        s.exp_avg_sq(s.exp_avg_sq().to(p.options()).contiguous());
      }
      if (!device_inputs) s.step(s.step() + 1);  // the kernel reads the step already counted, as torch.optim passes it
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(s.exp_avg());
      exp_avg_sqs.push_back(s.exp_avg_sq());
      steps.push_back(float(s.step()));
    }
    if (params.empty()) continue;
    if (device_inputs) {
#if LMZOO_HAS_TENSOR_LR_ADAMW
      TORCH_CHECK(g < device_inputs->steps.size() && device_inputs->steps[g].numel() == int64_t(params.size()),
                  "the device step counters do not match parameter group ", g);
      // [n_params] -> n_params 0-dim step tensors on the device
      const auto step_tensors = (device_inputs->steps[g] - not_counted).unbind(0);
      at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, step_tensors,
                        device_inputs->lr[g], std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(),
                        o.eps(), /*amsgrad=*/false, /*maximize=*/false, grad_scale, found_inf);
      continue;
#else
      (void)g;
      TORCH_CHECK(false, "a tensor learning rate for AdamW needs LibTorch 2.2 or later");
#endif
    }
    // [n_params] -> n_params 0-dim step tensors on the device
    auto step_tensors = (torch::tensor(steps, torch::kFloat).to(device, /*non_blocking=*/true) - not_counted).unbind(0);
    at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, step_tensors, o.lr(),
                      std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(), o.eps(), /*amsgrad=*/false,
                      /*maximize=*/false, grad_scale, found_inf);
  }
  return {norm, found_inf, /*counted_when_skipped=*/true};
#else
  (void)optimizer, (void)max_norm, (void)loss_scale, (void)uncounted, (void)norm_of, (void)device_inputs;
  TORCH_CHECK(false, "multi-tensor AdamW needs LibTorch 2.1 or later");
  return {};
#endif
}

}  // namespace

AdamWStepResult multi_tensor_clip_and_adamw_step(torch::optim::AdamW& optimizer, double max_norm,
                                                 const torch::Tensor& loss_scale, const torch::Tensor& uncounted,
                                                 const std::vector<torch::Tensor>& norm_of) {
  return clip_and_adamw(optimizer, max_norm, loss_scale, uncounted, norm_of, nullptr);
}

AdamWStepResult device_input_clip_and_adamw_step(torch::optim::AdamW& optimizer, double max_norm,
                                                 const torch::Tensor& uncounted, const DeviceAdamWInputs& inputs) {
  return clip_and_adamw(optimizer, max_norm, {}, uncounted, {}, &inputs);
}

}  // namespace lmzoo
