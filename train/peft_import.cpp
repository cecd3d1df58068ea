// PEFT import: adapter_config.json checked, the adapter tensors placed on lmzoo's projections through the base
// class's weight rules, and the result written as a LoRA checkpoint.
#include "train/peft_import.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "data/safetensors.h"
#include "models/hf_weights.h"
#include "models/lora_site_targets.h"
#include "train/checkpoint.h"
#include "train/lora_setup.h"

namespace lmzoo {

namespace fs = std::filesystem;

namespace {

struct AdapterPair {
  torch::Tensor A, B;  // (r, in), (out, r)
  bool used = false;
};

nlohmann::json read_adapter_config(const std::string& adapter_dir) {
  const std::string path = (fs::path(adapter_dir) / "adapter_config.json").string();
  return read_hf_json_file(path, "cannot read " + path);
}

bool empty_or_null(const nlohmann::json& cfg, const char* key) {
  return !cfg.contains(key) || cfg[key].is_null() || cfg[key].empty() || cfg[key] == false;
}

// Refuses what lmzoo's adapters do not implement, naming the field.
void check_supported(const nlohmann::json& cfg) {
  auto refuse = [](const std::string& what) { throw HfConfigError("adapter_config.json: " + what + " is not supported"); };
  if (cfg.value("peft_type", std::string()) != "LORA") refuse("peft_type " + cfg.value("peft_type", std::string("(none)")));
  if (cfg.value("bias", std::string("none")) != "none") refuse("bias " + cfg.value("bias", std::string()));
  for (const char* key : {"use_dora", "modules_to_save", "rank_pattern", "alpha_pattern", "layer_replication"}) {
    if (!empty_or_null(cfg, key)) refuse(key + std::string(" ") + cfg[key].dump());
  }
  if (!cfg.contains("r") || !cfg["r"].is_number_integer() || cfg["r"].get<int64_t>() < 1) refuse("r (a rank >= 1)");
  if (!cfg.contains("lora_alpha") || !cfg["lora_alpha"].is_number()) refuse("a missing lora_alpha");
}

// base_model.model.<module>.lora_A.weight (or with peft's adapter name, .lora_A.default.weight) -> <module>, A/B.
std::map<std::string, AdapterPair> read_adapter_tensors(const std::string& adapter_dir) {
  const std::string path = (fs::path(adapter_dir) / "adapter_model.safetensors").string();
  const SafetensorsFile file = SafetensorsFile::open(path);
  std::map<std::string, AdapterPair> out;
  const std::string prefix = "base_model.model.";
  for (const std::string& key : file.names()) {
    std::string name = key;
    const auto dflt = name.find(".default.");
    if (dflt != std::string::npos) name.erase(dflt, 8);
    const bool is_a = name.size() > 20 && name.compare(name.size() - 14, 14, ".lora_A.weight") == 0;
    const bool is_b = name.size() > 20 && name.compare(name.size() - 14, 14, ".lora_B.weight") == 0;
    if (name.rfind(prefix, 0) != 0 || !(is_a || is_b)) throw HfFormatError(path + ": unexpected tensor " + key);
    const std::string module = name.substr(prefix.size(), name.size() - prefix.size() - 14);
    (is_a ? out[module].A : out[module].B) = file.tensor(key).to(torch::kFloat);
  }
  for (const auto& [module, pair] : out) {
    if (!pair.A.defined() || !pair.B.defined()) throw HfFormatError(path + ": " + module + " lacks lora_A or lora_B");
  }
  return out;
}

std::string without_weight_suffix(const std::string& name) { return name.substr(0, name.size() - 7); }

// The HF module holding part I of a projection under RULE: one module per part, or one for all (fused).
std::string hf_module_of(const HfWeightRule& rule, size_t part, size_t parts) {
  return without_weight_suffix(rule.hf.size() == parts ? rule.hf[part] : rule.hf[0]);
}

}  // namespace

PeftImportResult import_peft_adapter(const std::string& adapter_dir, const std::string& base, const std::string& out_dir) {
  const nlohmann::json cfg = read_adapter_config(adapter_dir);
  check_supported(cfg);
  std::map<std::string, AdapterPair> pairs = read_adapter_tensors(adapter_dir);
  std::error_code ec;
  if (fs::exists(out_dir, ec)) throw std::invalid_argument("--out " + out_dir + " exists; name a new directory");
  const CheckpointInfo base_info = read_checkpoint(base);
  if (is_lora_run(base_info.train)) {
    throw std::invalid_argument("the base " + base_info.dir + " is itself a LoRA run: merge it first (lmzoo merge-lora)");
  }
  PeftImportResult result;
  result.architecture = hf_architecture_of(base_info.model);
  result.rank = cfg["r"].get<int64_t>();
  result.alpha = cfg["lora_alpha"].get<double>();
  if (cfg.value("use_rslora", false)) result.alpha *= std::sqrt(double(result.rank));  // alpha/sqrt(r) = alpha'/r
  std::map<std::string, HfWeightRule> rules;
  for (auto& rule : hf_weight_rules(result.architecture, base_info.model)) rules[rule.lmzoo] = rule;

  // The targets whose HF modules the file adapts.
  AnyModel model = build_model(base_info.model);
  std::vector<LoraTarget> targets;
  for (const LoraSiteTargets& site : lora_site_targets(*model.module())) {
    const HfWeightRule& rule = rules.at(site.linear + ".weight");
    for (size_t i = 0; i < site.parts.size(); ++i) {
      if (!pairs.count(hf_module_of(rule, i, site.parts.size()))) continue;
      if (rule.layout == HfLayout::kHeadInterleavedQkv) {
        throw HfConfigError("an adapter on " + rule.hf[0] + " (GPT-NeoX's per-head query_key_value) is not supported");
      }
      if (std::find(targets.begin(), targets.end(), site.parts[i]) == targets.end()) targets.push_back(site.parts[i]);
    }
  }
  TrainConfig train;
  train.objective = default_objective(base_info.model.arch, /*pairs_data=*/false);
  train.lora_rank = result.rank;
  train.lora_alpha = result.alpha;
  train.lora_dropout = cfg.value("lora_dropout", 0.0);
  train.lora_targets.clear();
  for (LoraTarget t : targets) train.lora_targets += (train.lora_targets.empty() ? "" : ",") + enum_name(t);
  if (targets.empty()) throw HfFormatError("adapter_model.safetensors adapts no projection of this " +
                                           enum_name(result.architecture));
  attach_lora(*model.module(), lora_settings(train));
  freeze_all_but_trainable(model, train);

  // Each lmzoo adapter from its HF module: A as it is, B's rows of the part (all of B for one module per part).
  torch::NoGradGuard no_grad;
  for (const LoraSite& site : lora_sites(*model.module())) {
    const HfWeightRule& rule = rules.at(site.linear + ".weight");
    int64_t row = 0;
    for (size_t i = 0; i < site.parts.size(); ++i) {
      const LoraPart& part = site.parts[i];
      const std::string module = hf_module_of(rule, i, site.parts.size());
      const auto found = pairs.find(module);
      if (!part.adapter.is_empty() && found != pairs.end()) {
        const bool fused = rule.hf.size() != site.parts.size();
        const torch::Tensor B = fused ? found->second.B.narrow(0, row, part.width) : found->second.B;
        if (found->second.A.sizes() != part.adapter->lora_A.sizes() || B.sizes() != part.adapter->lora_B.sizes()) {
          throw HfFormatError("adapter_model.safetensors: " + module + "'s lora_A/lora_B shapes do not fit rank " +
                              std::to_string(result.rank) + " on the base's " + site.linear);
        }
        part.adapter->lora_A.copy_(found->second.A);
        part.adapter->lora_B.copy_(B);
        found->second.used = true;
      }
      row += part.width;
    }
  }
  for (const auto& [module, pair] : pairs) {
    if (!pair.used) throw HfFormatError("adapter_model.safetensors adapts " + module + ", which the base has no projection named");
    ++result.modules;
  }
  CheckpointInfo info;
  info.model = base_info.model;
  info.train = train;
  info.train.init_checkpoint = fs::absolute(base_info.dir).lexically_normal().string();
  info.train.lora_base_digest = weights_digest(base_info.dir);
  info.tokenizer_model = base_info.tokenizer_model;
  save_checkpoint(out_dir, model.module(), /*optimizer=*/nullptr, info);
  return result;
}

}  // namespace lmzoo
