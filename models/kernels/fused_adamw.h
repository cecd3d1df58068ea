// Gradient clipping by global L2 norm and an AdamW step, with the math of torch::nn::utils::clip_grad_norm_ +
// torch::optim::AdamW and the state in the optimizer's own map, on the fastest path the tensors allow:
// - CPU fp32: one fused AVX2 pass per parameter (fused_adamw.cpp);
// - CUDA (LibTorch >= 2.1): foreach norms and at::_fused_adamw_ with the clip folded into its grad_scale, so the
//   step never waits for the GPU (multi_tensor_adamw.cpp);
// - anything else: the library's clip_grad_norm_ and AdamW::step.
// Leaves out: amsgrad on the fused paths (it takes the library's path).
#pragma once
#include <torch/torch.h>

namespace lmzoo {

// Scales gradients so that their global L2 norm is at most max_norm (no clipping when max_norm <= 0),
// then applies one AdamW step with each group's lr, betas, eps and weight decay. Returns the norm before
// clipping as a 0-dim tensor (0 when clipping is off), on the parameters' device: reading it syncs.
torch::Tensor clip_and_adamw_step(torch::optim::AdamW& optimizer, double max_norm);

// The multi-tensor path on its own (tests compare it with the library on whatever device has it).
bool multi_tensor_adamw_supported(torch::optim::AdamW& optimizer);
torch::Tensor multi_tensor_clip_and_adamw_step(torch::optim::AdamW& optimizer, double max_norm);

// p's AdamW state in the optimizer's map, created (step 0, zero moments) when missing.
torch::optim::AdamWParamState& adamw_state_for(torch::optim::AdamW& optimizer, const torch::Tensor& p);

}  // namespace lmzoo
