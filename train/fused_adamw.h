// Gradient clipping by global L2 norm and an AdamW step in one pass per parameter (CPU fp32), with the
// math of torch::nn::utils::clip_grad_norm_ + torch::optim::AdamW and state in the optimizer's own map.
// Leaves out: amsgrad and non-CPU / non-fp32 / sparse tensors (those take the library's path).
#pragma once
#include <torch/torch.h>

namespace lmzoo {

// Scales gradients so that their global L2 norm is at most max_norm (no clipping when max_norm <= 0),
// then applies one AdamW step with each group's lr, betas, eps and weight decay. Returns the norm
// before clipping (0 when clipping is off).
double clip_and_adamw_step(torch::optim::AdamW& optimizer, double max_norm);

}  // namespace lmzoo
