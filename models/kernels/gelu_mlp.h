// The feed-forward c_fc -> tanh GELU -> c_proj as one differentiable function (--fused-bias-gelu): on CUDA, c_fc's
// bias and the GELU run in its product's cuBLASLt epilogue (which also keeps GELU's input for the backward), and
// backward GELU's derivative and c_fc's bias gradient run in the epilogue of the product that brings the gradient
// back through c_proj; plain LibTorch ops elsewhere. Saves a read and a write of the hidden activations forward
// and two reads and a write backward.
#pragma once
#include <string>

#include <torch/torch.h>

#include "models/config.h"

namespace lmzoo {

// Process-wide: whether feed-forward layers send c_fc -> GELU -> c_proj to gelu_mlp (where it applies).
bool fused_bias_gelu_enabled();

// Switches fused bias + GELU on (or off) for its lifetime and restores the previous setting afterwards.
class FusedBiasGeluScope {
 public:
  explicit FusedBiasGeluScope(bool on);
  ~FusedBiasGeluScope();
  FusedBiasGeluScope(const FusedBiasGeluScope&) = delete;
  FusedBiasGeluScope& operator=(const FusedBiasGeluScope&) = delete;

 private:
  bool previous_;
};

// Why MODEL's feed-forward layers cannot take the epilogues on `device` with this build ("" when they can): the
// device, the activation (cuBLASLt's GELU is the tanh one; gated layers are not taken), the width (a multiple of
// 8), the build.
std::string fused_bias_gelu_unavailable_reason(const torch::Device& device, const ModelConfig& model);

// True when a feed-forward layer with these tensors takes gelu_mlp: switched on, the epilogues in this build,
// x on a CUDA device with the weights, of one floating dtype (or any under autocast), c_fc's width a multiple of 8.
// Biases may be undefined.
bool fused_bias_gelu_applies(const torch::Tensor& x, const torch::Tensor& fc_weight, const torch::Tensor& fc_bias,
                             const torch::Tensor& proj_weight, const torch::Tensor& proj_bias);

// x: (..., in), fc_weight: (hidden, in), fc_bias: (hidden) or undefined, proj_weight: (out, hidden), proj_bias:
// (out) or undefined -> gelu_tanh(x fc_weight^T + fc_bias) proj_weight^T + proj_bias, (..., out). Differentiable in
// all five. Under autocast it computes in autocast's dtype, as torch::linear would. Runs anywhere: on CUDA in
// builds with lmzoo's kernels the two products take cuBLASLt's epilogues where cuBLASLt has a kernel for them.
torch::Tensor gelu_mlp(const torch::Tensor& x, const torch::Tensor& fc_weight, const torch::Tensor& fc_bias,
                       const torch::Tensor& proj_weight, const torch::Tensor& proj_bias);

// How many products ran with a cuBLASLt GELU epilogue in this process so far.
int64_t gelu_mlp_epilogue_products();

// The first product cuBLASLt had no epilogue kernel for (it took the plain ops), described; "" when none yet.
std::string gelu_mlp_first_refusal();

}  // namespace lmzoo
