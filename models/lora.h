// LoRA (Hu et al. 2021): low-rank adapters y = W x + (alpha / r) B A dropout(x) on a model's projections, attached
// to a built model of any family, counted, merged into the weights, and named for checkpoints and PEFT.
// Leaves out: freezing and the run's checkpoints (train/peft/lora_setup.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "base/enum_table.h"
#include "models/config.h"

namespace lmzoo {

// The projections an adapter may sit on. Fused projections (gpt's c_attn = [q; k; v], t5's cross c_kv = [k; v])
// get one adapter per part, each adding into its rows of the output.
enum class LoraTarget { kQuery, kKey, kValue, kOutput, kUp, kGate, kDown };

template <>
struct EnumTable<LoraTarget> {
  static constexpr const char* what = "LoRA target";
  static constexpr EnumEntry<LoraTarget> entries[] = {
      {LoraTarget::kQuery, "q", "attention queries"},
      {LoraTarget::kKey, "k", "attention keys"},
      {LoraTarget::kValue, "v", "attention values"},
      {LoraTarget::kOutput, "o", "attention output"},
      {LoraTarget::kUp, "up", "feed-forward input (gated: the linear half)"},
      {LoraTarget::kGate, "gate", "gated feed-forward's activated half"},
      {LoraTarget::kDown, "down", "feed-forward output"},
  };
};

struct LoraSettings {
  int64_t rank = 0;  // 0: no adapters
  double alpha = 16.0;
  double dropout = 0.0;
  std::vector<LoraTarget> targets;

  bool enabled() const { return rank > 0; }
  bool targets_part(LoraTarget t) const;
  double scale() const { return alpha / double(rank); }
};

// "q,v" or "all-linear" (every target) -> the set; throws std::invalid_argument naming an unknown part.
std::vector<LoraTarget> parse_lora_targets(const std::string& text);

// One adapter: lora_A (rank, in) Kaiming-uniform as PEFT's, lora_B (out, rank) zero, so a new adapter changes
// nothing. delta(x): (..., in) -> (..., out) = scale * B A dropout(x).
class LoraAdapterImpl : public torch::nn::Module {
 public:
  LoraAdapterImpl(int64_t in, int64_t out, const LoraSettings& settings);
  torch::Tensor delta(const torch::Tensor& x);
  // scale * B A: (out, in), in the adapter's dtype.
  torch::Tensor weight_delta() const;

  torch::Tensor lora_A, lora_B;
  double scale;

 private:
  torch::nn::Dropout dropout_{nullptr};
};
TORCH_MODULE(LoraAdapter);

// For the layers (attention, feed-forward): one part of a projection's output rows and its adapter (empty: none).
struct LoraPart {
  LoraAdapter adapter{nullptr};
  int64_t width = 0;
};
// y (..., sum of the parts' widths), the projection of x, plus each part's adapter delta in its rows.
torch::Tensor with_lora(const torch::Tensor& y, const torch::Tensor& x, const std::vector<LoraPart>& parts);
// Registers an adapter NAME on OWNER for ROWS output rows of LINEAR; throws when the rank exceeds the part's
// smaller side.
LoraAdapter make_lora_adapter(torch::nn::Module& owner, const std::string& name, const torch::nn::Linear& linear,
                              int64_t rows, const LoraSettings& settings);
// Adds ADAPTER's delta (if any) to LINEAR's weight rows from ROW_OFFSET, unregisters it from OWNER as NAME and
// empties it.
void merge_lora_part(torch::nn::Module& owner, const std::string& name, const torch::nn::Linear& linear,
                     int64_t row_offset, LoraAdapter& adapter);

// One projection of a layer and its adapters: LINEAR's full name ("h.0.attn.c_attn") and its output rows' parts in
// order (an empty adapter where a part has none).
struct LoraSite {
  std::string linear;
  std::vector<LoraPart> parts;
};

// A layer whose projections LoRA can adapt (self- and cross-attention, the feed-forward). The functions below find
// them in a model through this interface alone, so this file needs none of the layers' headers.
class LoraAdaptable {
 public:
  virtual ~LoraAdaptable() = default;
  // The parts this layer can adapt.
  virtual std::vector<LoraTarget> lora_parts() const = 0;
  // Attaches adapters to the parts SETTINGS targets and returns those parts.
  virtual std::vector<LoraTarget> attach_lora(const LoraSettings& settings) = 0;
  // Folds the adapters into the weights and removes them.
  virtual void merge_lora() = 0;
  // The projections with adapters, named relative to this layer.
  virtual std::vector<LoraSite> lora_sites() const = 0;
};

// Every projection of MODEL that has at least one adapter, in module order.
std::vector<LoraSite> lora_sites(const torch::nn::Module& model);

// Attaches adapters for SETTINGS.targets to every attention and feed-forward layer of MODEL (any family) and
// returns how many. Throws std::invalid_argument when a target matches no layer of this model (naming the targets
// it has) or the rank exceeds a targeted projection's smaller side.
int64_t attach_lora(torch::nn::Module& model, const LoraSettings& settings);

// True for an adapter's tensor name ("h.0.attn.lora_q.lora_A").
bool is_lora_tensor(const std::string& name);

// Folds every adapter into its projection's weight (W[rows] += scale B A, in fp32 then stored in W's dtype) and
// removes the adapters: MODEL then has exactly the tensors of its config's plain model.
void merge_lora(torch::nn::Module& model);

// The targets a model of CONFIG can take (non-gated feed-forwards have no gate).
std::vector<LoraTarget> lora_targets_of(const ModelConfig& config);

// Parameters the adapters of SETTINGS add to a model of CONFIG.
int64_t lora_parameter_count(const ModelConfig& config, const LoraSettings& settings);

}  // namespace lmzoo
