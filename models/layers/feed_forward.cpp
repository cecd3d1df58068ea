// Position-wise feed-forward layer with a configurable activation, plain or gated.
#include "models/layers/feed_forward.h"

#include "models/kernels/activation_kernel.h"
#include "models/kernels/linear_kernel.h"

namespace lmzoo {

torch::Tensor apply_activation(const torch::Tensor& x, Activation activation) {
  switch (activation) {
    case Activation::kRelu: return torch::relu(x);
    case Activation::kGelu: return fused_gelu(x);  // torch::gelu where the fused kernel does not apply
    // geglu: the tanh GELU, as T5 v1.1's "gated-gelu" (HF gelu_new, mesh-tensorflow's gelu).
    case Activation::kGeluTanh:
    case Activation::kGeglu: return torch::gelu(x, "tanh");
    case Activation::kSilu:
    case Activation::kSwiglu: return torch::silu(x);
  }
  throw std::logic_error("activation outside its table");
}

FeedForwardImpl::FeedForwardImpl(const ModelConfig& config) : activation_(config.activation) {
  auto linear = [&](int64_t in, int64_t out) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(config.bias));
  };
  c_fc = register_module("c_fc", linear(config.d_model, config.ff_dim()));
  if (config.gated_ffn()) c_fc_lin = register_module("c_fc_lin", linear(config.d_model, config.ff_dim()));
  c_proj = register_module("c_proj", linear(config.ff_dim(), config.d_model));
  if (config.ffn_hidden_dropout()) hidden_dropout = register_module("hidden_dropout", torch::nn::Dropout(config.dropout));
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  auto h = apply_activation(fast_linear(x, c_fc->weight, c_fc->bias), activation_);  // (B, T, ff)
  if (c_fc_lin) h = h * fast_linear(x, c_fc_lin->weight, c_fc_lin->bias);
  if (hidden_dropout) h = hidden_dropout(h);
  return fast_linear(h, c_proj->weight, c_proj->bias);
}

}  // namespace lmzoo
