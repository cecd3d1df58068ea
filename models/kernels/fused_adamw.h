// Gradient clipping by global L2 norm and an AdamW step, with the math of torch::nn::utils::clip_grad_norm_ +
// torch::optim::AdamW and the state in the optimizer's own map, on the fastest path the tensors allow:
// - CPU fp32: one fused AVX2 pass per parameter (fused_adamw.cpp);
// - CUDA (LibTorch >= 2.1): foreach norms and at::_fused_adamw_ with the clip folded into its grad_scale, so the
//   step never waits for the GPU (multi_tensor_adamw.cpp);
// - anything else: the library's clip_grad_norm_ and AdamW::step.
// Leaves out: amsgrad on the fused paths (it takes the library's path).
// Every path skips a step whose gradients are not finite (the trainer counts and reports those steps).
#pragma once
#include <vector>

#include <torch/torch.h>

namespace lmzoo {

// What one clip + AdamW call did; 0-dim tensors on the parameters' device (reading them waits for it).
struct AdamWStepResult {
  torch::Tensor grad_norm;  // global L2 norm of the unscaled gradients, before clipping
  torch::Tensor skipped;    // float 1 when that norm is not finite: parameters and moments were left untouched
  // The multi-tensor path counts every call in the Adam step counters, skipped or not (it never waits for the
  // device to learn which); its caller adds `skipped` to the `uncounted` it passes on and, at its next sync
  // point, hands the total to take_back_skipped_steps. The other paths skip on the host and count nothing.
  bool counted_when_skipped = false;
};

// Scales gradients so that their global L2 norm is at most max_norm (no clipping when max_norm <= 0),
// then applies one AdamW step with each group's lr, betas, eps and weight decay, unless the norm is not
// finite (NaN / inf gradients), in which case nothing changes.
// loss_scale (optional, 0-dim): the gradients are of the loss times it (fp16 loss scaling); they are
// divided by it before clipping. uncounted (optional, 0-dim float): skipped steps the step counters still
// include (see AdamWStepResult); the bias corrections leave them out. norm_of (optional): the gradients whose
// global norm clips and decides a skip, when the optimizer holds only some of them (a rank that updates its
// share of the parameters, ZeRO-1, passes all of them in the whole optimizer's order: the norm has its bits).
AdamWStepResult clip_and_adamw_step(torch::optim::AdamW& optimizer, double max_norm,
                                    const torch::Tensor& loss_scale = {}, const torch::Tensor& uncounted = {},
                                    const std::vector<torch::Tensor>& norm_of = {});

// What a replayed CUDA graph's step reads on the device where the eager step passes host values (lmzoo's
// GraphedTrainStep fills them before each replay): per parameter group, the learning rate (0-dim float) and the Adam
// step counters, already counted for this step, of the parameters that have gradients ([n] float, the group's order).
// The host's counters (AdamWParamState::step) are then the caller's to advance.
struct DeviceAdamWInputs {
  std::vector<torch::Tensor> lr;
  std::vector<torch::Tensor> steps;
};

// Takes n skipped steps back from every parameter's Adam step counter (see AdamWStepResult).
void take_back_skipped_steps(torch::optim::AdamW& optimizer, int64_t n);

// The multi-tensor path on its own (tests compare it with the library on whatever device has it).
bool multi_tensor_adamw_supported(torch::optim::AdamW& optimizer, const std::vector<torch::Tensor>& norm_of = {});
AdamWStepResult multi_tensor_clip_and_adamw_step(torch::optim::AdamW& optimizer, double max_norm,
                                                 const torch::Tensor& loss_scale = {},
                                                 const torch::Tensor& uncounted = {},
                                                 const std::vector<torch::Tensor>& norm_of = {});
// The multi-tensor path with the learning rate and step counters read from INPUTS on the device (LibTorch >= 2.2:
// _fused_adamw_'s tensor lr): nothing is read from or written to the host, so a CUDA graph can record the call.
AdamWStepResult device_input_clip_and_adamw_step(torch::optim::AdamW& optimizer, double max_norm,
                                                 const torch::Tensor& uncounted, const DeviceAdamWInputs& inputs);

// The gradients a step's norm is taken over: norm_of when given, else the defined gradients of the optimizer's
// parameters, group by group.
std::vector<torch::Tensor> gradients_for_norm(torch::optim::AdamW& optimizer, const std::vector<torch::Tensor>& norm_of);

// p's AdamW state in the optimizer's map, created (step 0, zero moments) when missing.
torch::optim::AdamWParamState& adamw_state_for(torch::optim::AdamW& optimizer, const torch::Tensor& p);

}  // namespace lmzoo
