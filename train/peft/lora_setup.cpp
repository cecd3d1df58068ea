// LoRA runs: adapters attached and the rest frozen, frozen projections lowered to bf16 or int8, the adapter file
// written and read by name, and the base weights' digest.
#include "train/peft/lora_setup.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "data/safetensors.h"
#include "models/kernels/low_precision_linear.h"
#include "models/layers/attention.h"
#include "models/layers/feed_forward.h"

namespace lmzoo {

namespace {

// Stores LINEAR's weight in PRECISION when it is frozen (the same Parameter object, new storage).
void lower(const torch::nn::Linear& linear, BasePrecision precision) {
  if (linear.is_empty() || linear->weight.requires_grad()) return;
  if (precision == BasePrecision::kInt8) return quantize_frozen_weight_int8(linear);
  torch::NoGradGuard no_grad;
  linear->weight.set_data(linear->weight.to(torch::kBFloat16));
}

}  // namespace

LoraSettings lora_settings(const TrainConfig& config) {
  LoraSettings s;
  s.rank = config.lora_rank;
  s.alpha = config.lora_alpha;
  s.dropout = config.lora_dropout;
  if (s.enabled()) s.targets = parse_lora_targets(config.lora_targets);
  return s;
}

std::vector<std::string> trainable_name_parts(const TrainConfig& config) {
  std::vector<std::string> out;
  std::stringstream in(config.trainable);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

int64_t freeze_all_but_trainable(AnyModel& model, const TrainConfig& config) {
  const std::shared_ptr<torch::nn::Module> module = model.module();
  const std::vector<std::string> trainable = trainable_name_parts(config);
  std::vector<bool> matched(trainable.size(), false);
  int64_t count = 0;
  for (auto& item : module->named_parameters()) {
    const std::string& name = item.key();
    bool trains = is_lora_tensor(name) || (model.is_classifier() && name.rfind("classifier.", 0) == 0);
    for (size_t i = 0; i < trainable.size(); ++i) {
      if (name.find(trainable[i]) != std::string::npos) {
        matched[i] = true;
        trains = true;
      }
    }
    item.value().set_requires_grad(trains);
    if (trains) count += item.value().numel();
  }
  for (size_t i = 0; i < trainable.size(); ++i) {
    if (!matched[i]) {
      throw std::invalid_argument("--trainable: '" + trainable[i] +
                                  "' is part of no parameter name (e.g. ln_, lm_head, wte; see the names in lmzoo "
                                  "presets --show)");
    }
  }
  return count;
}

void lower_frozen_projections(AnyModel& model, BasePrecision precision) {
  if (precision == BasePrecision::kFp32) return;
  for (const auto& m : model.module()->modules(/*include_self=*/false)) {
    if (auto* self = dynamic_cast<SelfAttentionImpl*>(m.get())) {
      lower(self->c_attn, precision);
      lower(self->c_proj, precision);
    } else if (auto* cross = dynamic_cast<CrossAttentionImpl*>(m.get())) {
      lower(cross->c_q, precision);
      lower(cross->c_kv, precision);
      lower(cross->c_proj, precision);
    } else if (auto* ffn = dynamic_cast<FeedForwardImpl*>(m.get())) {
      lower(ffn->c_fc, precision);
      lower(ffn->c_fc_lin, precision);
      lower(ffn->c_proj, precision);
    }
  }
}

std::string weights_digest(const std::string& checkpoint_dir) {
  const std::string path = (std::filesystem::path(checkpoint_dir) / "model.pt").string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read the base weights " + path);
  // FNV-1a over 8-byte words (the tail zero-padded): a fast content digest, not a cryptographic one.
  uint64_t hash = 1469598103934665603ULL, size = 0;
  std::vector<char> buffer(1 << 22);
  while (in) {
    in.read(buffer.data(), std::streamsize(buffer.size()));
    const size_t got = size_t(in.gcount());
    if (got == 0) break;
    size += got;
    const size_t padded = (got + 7) / 8 * 8;
    std::fill(buffer.begin() + std::ptrdiff_t(got), buffer.begin() + std::ptrdiff_t(padded), 0);
    for (size_t i = 0; i < padded; i += 8) {
      uint64_t word;
      std::memcpy(&word, buffer.data() + i, 8);
      hash = (hash ^ word) * 1099511628211ULL;
    }
  }
  char text[64];
  std::snprintf(text, sizeof text, "fnv1a64:%016llx:%llu", static_cast<unsigned long long>(hash),
                static_cast<unsigned long long>(size));
  return text;
}

void save_trainable_tensors(const std::string& path, const torch::nn::Module& model) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& item : model.named_parameters()) {
    if (item.value().requires_grad()) tensors.emplace_back(item.key(), item.value().detach());
  }
  write_safetensors(path, tensors, {{"format", "lmzoo-lora"}});
}

void load_trainable_tensors(const std::string& path, torch::nn::Module& model) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  auto params = model.named_parameters();
  torch::NoGradGuard no_grad;
  for (const auto& name : file.names()) {
    torch::Tensor* p = params.find(name);
    if (!p) throw std::runtime_error(path + " has " + name + ", which this model does not have");
    const torch::Tensor t = file.tensor(name);
    if (t.sizes() != p->sizes()) {
      throw std::runtime_error(path + ": " + name + " has another shape than the model's");
    }
    p->copy_(t);
  }
  for (const auto& item : params) {
    if (is_lora_tensor(item.key()) && !file.contains(item.key())) {
      throw std::runtime_error(path + " lacks the adapter tensor " + item.key());
    }
  }
}

}  // namespace lmzoo
