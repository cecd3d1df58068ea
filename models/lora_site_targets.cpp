// The LoRA targets of each adaptable projection's parts, by layer kind (attention, cross-attention, feed-forward).
#include "models/lora_site_targets.h"

#include "models/layers/attention.h"
#include "models/layers/feed_forward.h"

namespace lmzoo {

std::vector<LoraSiteTargets> lora_site_targets(const torch::nn::Module& model) {
  using T = LoraTarget;
  std::vector<LoraSiteTargets> out;
  for (const auto& item : model.named_modules()) {
    const std::string p = item.key().empty() ? "" : item.key() + ".";
    const torch::nn::Module* m = item.value().get();
    if (dynamic_cast<const SelfAttentionImpl*>(m)) {
      out.push_back({p + "c_attn", {T::kQuery, T::kKey, T::kValue}});
      out.push_back({p + "c_proj", {T::kOutput}});
    } else if (dynamic_cast<const CrossAttentionImpl*>(m)) {
      out.push_back({p + "c_q", {T::kQuery}});
      out.push_back({p + "c_kv", {T::kKey, T::kValue}});
      out.push_back({p + "c_proj", {T::kOutput}});
    } else if (const auto* ffn = dynamic_cast<const FeedForwardImpl*>(m)) {
      if (ffn->c_fc_lin) {
        out.push_back({p + "c_fc", {T::kGate}});
        out.push_back({p + "c_fc_lin", {T::kUp}});
      } else {
        out.push_back({p + "c_fc", {T::kUp}});
      }
      out.push_back({p + "c_proj", {T::kDown}});
    }
  }
  return out;
}

}  // namespace lmzoo
