// LoRA adapters: the adapter module, attaching adapters to every attention and feed-forward layer of a model,
// folding them into the weights, and their parameter count.
#include "models/lora.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "models/kernels/linear_kernel.h"
#include "models/kernels/low_precision_linear.h"

namespace lmzoo {

bool LoraSettings::targets_part(LoraTarget t) const {
  return std::find(targets.begin(), targets.end(), t) != targets.end();
}

std::vector<LoraTarget> parse_lora_targets(const std::string& text) {
  std::vector<LoraTarget> out;
  auto add = [&](LoraTarget t) {
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  };
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    if (part == "all-linear") {
      for (const auto& entry : EnumTable<LoraTarget>::entries) add(entry.value);
      continue;
    }
    const auto target = find_enum<LoraTarget>(part);
    if (!target) {
      throw std::invalid_argument("--lora-targets: unknown part '" + part + "' (choose from " +
                                  enum_choices<LoraTarget>(",") + " or all-linear)");
    }
    add(*target);
  }
  if (out.empty()) throw std::invalid_argument("--lora-targets names no part");
  return out;
}

LoraAdapterImpl::LoraAdapterImpl(int64_t in, int64_t out, const LoraSettings& settings) : scale(settings.scale()) {
  // PEFT's init: A ~ kaiming_uniform(a = sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in)); B = 0.
  const double bound = 1.0 / std::sqrt(double(in));
  lora_A = register_parameter("lora_A", torch::empty({settings.rank, in}).uniform_(-bound, bound));
  lora_B = register_parameter("lora_B", torch::zeros({out, settings.rank}));
  dropout_ = register_module("dropout", torch::nn::Dropout(settings.dropout));
}

torch::Tensor LoraAdapterImpl::delta(const torch::Tensor& x) {
  auto h = fast_linear(dropout_(x), lora_A);  // (..., r)
  return fast_linear(h, lora_B) * scale;      // (..., out)
}

torch::Tensor LoraAdapterImpl::weight_delta() const { return torch::mm(lora_B, lora_A) * scale; }  // (out, in)

torch::Tensor with_lora(const torch::Tensor& y, const torch::Tensor& x, const std::vector<LoraPart>& parts) {
  bool any = false;
  for (const auto& part : parts) any = any || !part.adapter.is_empty();
  if (!any) return y;
  if (parts.size() == 1) return y + LoraAdapter(parts[0].adapter)->delta(x).to(y.scalar_type());
  std::vector<torch::Tensor> deltas;
  auto sizes = y.sizes().vec();
  for (LoraPart part : parts) {  // a copy: delta() is not const
    sizes.back() = part.width;
    deltas.push_back(part.adapter.is_empty() ? torch::zeros(sizes, y.options())
                                             : part.adapter->delta(x).to(y.scalar_type()));  // (..., width)
  }
  return y + torch::cat(deltas, -1);  // (..., sum of widths) = y's
}

LoraAdapter make_lora_adapter(torch::nn::Module& owner, const std::string& name, const torch::nn::Linear& linear,
                              int64_t rows, const LoraSettings& settings) {
  const int64_t in = linear->weight.size(1);
  if (settings.rank > std::min(in, rows)) {
    throw std::invalid_argument("--lora-rank " + std::to_string(settings.rank) + " exceeds the smaller side (" +
                                std::to_string(std::min(in, rows)) + ") of the " + std::to_string(rows) + " x " +
                                std::to_string(in) + " projection it would adapt");
  }
  return owner.register_module(name, LoraAdapter(in, rows, settings));
}

void merge_lora_part(torch::nn::Module& owner, const std::string& name, const torch::nn::Linear& linear,
                     int64_t row_offset, LoraAdapter& adapter) {
  if (adapter.is_empty()) return;
  {
    torch::NoGradGuard no_grad;  // the delta too: no graph for it
    add_to_weight_rows(linear, row_offset, adapter->weight_delta());  // (out part, in), in the weight's storage
  }
  owner.unregister_module(name);
  adapter = nullptr;
}

int64_t attach_lora(torch::nn::Module& model, const LoraSettings& settings) {
  if (settings.rank < 1) throw std::invalid_argument("--lora-rank must be at least 1");
  std::vector<LoraTarget> available, attached;
  int64_t count = 0;
  for (const auto& m : model.modules(/*include_self=*/true)) {
    auto* layer = dynamic_cast<LoraAdaptable*>(m.get());
    if (layer == nullptr) continue;
    for (LoraTarget t : layer->lora_parts()) {
      if (std::find(available.begin(), available.end(), t) == available.end()) available.push_back(t);
    }
    for (LoraTarget t : layer->attach_lora(settings)) {
      ++count;
      if (std::find(attached.begin(), attached.end(), t) == attached.end()) attached.push_back(t);
    }
  }
  // all-linear (every target named) adapts what the model has: a feed-forward without a gate has no gate.
  const bool every_target = settings.targets.size() == std::size(EnumTable<LoraTarget>::entries);
  for (LoraTarget t : settings.targets) {
    if (every_target || std::find(attached.begin(), attached.end(), t) != attached.end()) continue;
    std::string names;
    for (const auto& entry : EnumTable<LoraTarget>::entries) {
      if (std::find(available.begin(), available.end(), entry.value) != available.end()) {
        names += (names.empty() ? "" : ",") + std::string(entry.name);
      }
    }
    throw std::invalid_argument("--lora-targets: '" + enum_name(t) + "' matches no layer of this model (it has " +
                                names + ")");
  }
  return count;
}

std::vector<LoraSite> lora_sites(const torch::nn::Module& model) {
  std::vector<LoraSite> out;
  auto add = [&](const std::string& prefix, std::vector<LoraSite> sites) {
    for (auto& site : sites) {
      bool any = false;
      for (const auto& part : site.parts) any = any || !part.adapter.is_empty();
      if (!any) continue;
      site.linear = prefix.empty() ? site.linear : prefix + "." + site.linear;
      out.push_back(std::move(site));
    }
  };
  for (const auto& item : model.named_modules()) {
    if (const auto* layer = dynamic_cast<const LoraAdaptable*>(item.value().get())) add(item.key(), layer->lora_sites());
  }
  return out;
}

bool is_lora_tensor(const std::string& name) { return name.find("lora_") != std::string::npos; }

void merge_lora(torch::nn::Module& model) {
  for (const auto& m : model.modules(/*include_self=*/true)) {
    if (auto* layer = dynamic_cast<LoraAdaptable*>(m.get())) layer->merge_lora();
  }
}

std::vector<LoraTarget> lora_targets_of(const ModelConfig& config) {
  std::vector<LoraTarget> out = {LoraTarget::kQuery, LoraTarget::kKey, LoraTarget::kValue, LoraTarget::kOutput,
                                 LoraTarget::kUp};
  if (config.gated_ffn()) out.push_back(LoraTarget::kGate);
  out.push_back(LoraTarget::kDown);
  return out;
}

int64_t lora_parameter_count(const ModelConfig& config, const LoraSettings& settings) {
  if (!settings.enabled()) return 0;
  const int64_t C = config.d_model, r = settings.rank;
  auto adapter = [&](int64_t in, int64_t out) { return r * (in + out); };
  auto attention = [&] {
    int64_t n = 0;
    if (settings.targets_part(LoraTarget::kQuery)) n += adapter(C, config.attn_dim());
    if (settings.targets_part(LoraTarget::kKey)) n += adapter(C, config.kv_dim());
    if (settings.targets_part(LoraTarget::kValue)) n += adapter(C, config.kv_dim());
    if (settings.targets_part(LoraTarget::kOutput)) n += adapter(config.attn_dim(), C);
    return n;
  };
  int64_t ffn = 0;
  if (settings.targets_part(LoraTarget::kUp)) ffn += adapter(C, config.ff_dim());
  if (settings.targets_part(LoraTarget::kGate) && config.gated_ffn()) ffn += adapter(C, config.ff_dim());
  if (settings.targets_part(LoraTarget::kDown)) ffn += adapter(config.ff_dim(), C);
  const int64_t blocks = config.n_layer + (config.arch == Arch::kT5 ? config.decoder_layers() : 0);
  int64_t total = blocks * (attention() + ffn);
  if (config.arch == Arch::kT5) total += config.decoder_layers() * attention();
  return total;
}

}  // namespace lmzoo
