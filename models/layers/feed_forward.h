// Position-wise feed-forward layer: c_fc -> activation -> c_proj (-> dropout by the caller), or gated
// (geglu / swiglu, T5 v1.1): act(c_fc x) * c_fc_lin x -> c_proj (HF T5's wi_0, wi_1, wo).
#pragma once
#include <torch/torch.h>

#include "models/config.h"
#include "models/lora.h"

namespace lmzoo {

// Applies a named activation (relu | gelu | gelu-tanh | silu). The gated names apply their gate's
// activation (geglu: gelu-tanh, swiglu: silu).
torch::Tensor apply_activation(const torch::Tensor& x, Activation activation);

class FeedForwardImpl : public torch::nn::Module, public LoraAdaptable {
 public:
  explicit FeedForwardImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& x);

  // LoRA (models/lora.h): up is c_fc (gated: c_fc_lin, the linear half), gate the gated c_fc, down c_proj.
  std::vector<LoraTarget> lora_parts() const override;
  std::vector<LoraTarget> attach_lora(const LoraSettings& settings) override;
  void merge_lora() override;
  std::vector<LoraSite> lora_sites() const override;

  torch::nn::Linear c_fc{nullptr}, c_fc_lin{nullptr}, c_proj{nullptr};  // c_fc_lin: gated only
  torch::nn::Dropout hidden_dropout{nullptr};  // t5 only (HF T5 drops the hidden activations)
  // Adapters on c_fc, c_fc_lin and c_proj; empty unless attached.
  LoraAdapter lora_fc{nullptr}, lora_fc_lin{nullptr}, lora_proj{nullptr};

 private:
  Activation activation_;
};
TORCH_MODULE(FeedForward);

}  // namespace lmzoo
