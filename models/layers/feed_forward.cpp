// Position-wise feed-forward layer with a configurable activation, plain or gated.
#include "models/layers/feed_forward.h"

#include "models/kernels/activation_kernel.h"
#include "models/kernels/gelu_mlp.h"
#include "models/kernels/low_precision_linear.h"

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
  // --fused-bias-gelu: a plain tanh-GELU layer without adapters as one function with cuBLASLt's epilogues.
  if (activation_ == Activation::kGeluTanh && !c_fc_lin && !hidden_dropout && !lora_fc && !lora_proj &&
      fused_bias_gelu_applies(x, c_fc->weight, c_fc->bias, c_proj->weight, c_proj->bias)) {
    return gelu_mlp(x, c_fc->weight, c_fc->bias, c_proj->weight, c_proj->bias);
  }
  const int64_t ff = c_fc->weight.size(0);
  auto h = apply_activation(with_lora(apply_linear(x, c_fc), x, {{lora_fc, ff}}),
                            activation_);  // (B, T, ff)
  if (c_fc_lin) h = h * with_lora(apply_linear(x, c_fc_lin), x, {{lora_fc_lin, ff}});
  if (hidden_dropout) h = hidden_dropout(h);
  return with_lora(apply_linear(h, c_proj), h, {{lora_proj, c_proj->weight.size(0)}});
}

std::vector<LoraTarget> FeedForwardImpl::lora_parts() const {
  if (c_fc_lin) return {LoraTarget::kUp, LoraTarget::kGate, LoraTarget::kDown};
  return {LoraTarget::kUp, LoraTarget::kDown};
}

std::vector<LoraTarget> FeedForwardImpl::attach_lora(const LoraSettings& settings) {
  std::vector<LoraTarget> attached;
  auto attach = [&](LoraTarget t, LoraAdapter& slot, const char* name, const torch::nn::Linear& linear) {
    if (!settings.targets_part(t)) return;
    slot = make_lora_adapter(*this, name, linear, linear->weight.size(0), settings);
    attached.push_back(t);
  };
  if (c_fc_lin) {
    attach(LoraTarget::kGate, lora_fc, "lora_fc", c_fc);
    attach(LoraTarget::kUp, lora_fc_lin, "lora_fc_lin", c_fc_lin);
  } else {
    attach(LoraTarget::kUp, lora_fc, "lora_fc", c_fc);
  }
  attach(LoraTarget::kDown, lora_proj, "lora_proj", c_proj);
  return attached;
}

std::vector<LoraSite> FeedForwardImpl::lora_sites() const {
  std::vector<LoraSite> sites = {{"c_fc", {{lora_fc, c_fc->weight.size(0)}}}};
  if (c_fc_lin) sites.push_back({"c_fc_lin", {{lora_fc_lin, c_fc_lin->weight.size(0)}}});
  sites.push_back({"c_proj", {{lora_proj, c_proj->weight.size(0)}}});
  return sites;
}

void FeedForwardImpl::merge_lora() {
  merge_lora_part(*this, "lora_fc", c_fc, 0, lora_fc);
  if (c_fc_lin) merge_lora_part(*this, "lora_fc_lin", c_fc_lin, 0, lora_fc_lin);
  merge_lora_part(*this, "lora_proj", c_proj, 0, lora_proj);
}

}  // namespace lmzoo
