// A frozen projection stored in low precision (a LoRA run's --base-precision bf16 or int8): y = x W^T + b computed in
// x's dtype, keeping only the stored W (and an int8 weight's per-row scales) for the backward, never an fp32 copy.
#pragma once
#include <torch/torch.h>

namespace lmzoo {

// The buffer beside an int8 weight that holds its per-output-row scales: W = weight * weight_scale[:, None].
inline constexpr const char* kWeightScaleBuffer = "weight_scale";

// x: (..., K) in the compute dtype; weight: (N, K) in another dtype, not requiring grad; row_scale: (N) fp32 for an
// int8 weight (W = weight * row_scale[:, None]), else undefined; bias: (N) or undefined, not requiring grad ->
// (..., N) in x's dtype. Differentiable in x.
torch::Tensor low_precision_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                                   const torch::Tensor& row_scale = {});

// Stores LAYER's frozen weight as int8, symmetric per output row (scale = max |row| / 127; an all-zero row gets
// scale 1), with the scales as its kWeightScaleBuffer buffer. A weight that trains or is already int8 is left.
void quantize_frozen_weight_int8(const torch::nn::Linear& layer);

// Adds DELTA (n, K) to rows [row_offset, row_offset + n) of LAYER's weight in its storage: fp32 and bf16 rounded to
// their dtype, int8 rows quantized afresh with new scales for those rows. No gradient.
void add_to_weight_rows(const torch::nn::Linear& layer, int64_t row_offset, const torch::Tensor& delta);

// LAYER applied to x: low_precision_linear where its weight is stored in low precision (bf16, or int8 with its
// scales), else fast_linear.
torch::Tensor apply_linear(const torch::Tensor& x, const torch::nn::Linear& layer);

}  // namespace lmzoo
