// PEFT import: adapter_config.json checked, the adapter tensors placed on lmzoo's projections through the base
// class's weight rules, and the result written as a LoRA checkpoint.
#include "train/peft/peft_import.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "data/safetensors.h"
#include "models/hf_weights.h"
#include "models/lora_site_targets.h"
#include "train/checkpoint/checkpoint.h"
#include "train/peft/lora_setup.h"
#include "train/train_config.h"

namespace lmzoo {

namespace fs = std::filesystem;

namespace {

struct AdapterPair {
  torch::Tensor A, B;  // (r, in), (out, r)
  bool used = false;
};

std::string adapter_config_path(const std::string& adapter_dir) {
  return (fs::path(adapter_dir) / "adapter_config.json").string();
}

nlohmann::json read_adapter_config(const std::string& adapter_dir) {
  const std::string path = adapter_config_path(adapter_dir);
  return read_hf_json_file(path, "cannot read " + path);
}

bool empty_or_null(const nlohmann::json& cfg, const char* key) {
  return !cfg.contains(key) || cfg[key].is_null() || cfg[key].empty() || cfg[key] == false;
}

// A JSON value as a message shows it: its text, cut short past 60 characters.
std::string shown(const nlohmann::json& value) {
  const std::string text = value.dump();
  return text.size() <= 60 ? text : text.substr(0, 57) + "...";
}

// The settings of adapter_config.json lmzoo reads, each checked for its JSON type and range.
struct AdapterSettings {
  int64_t rank = 0;
  double alpha = 0;      // as the file gives it
  bool rslora = false;   // PEFT's scale alpha / sqrt(r) instead of alpha / r
  double dropout = 0;
};

// Reads PATH's settings, refusing in one line naming the file and the field: a file that is not a JSON object, a
// field of the wrong JSON type or outside lmzoo's range (r: 1..kMaxLoraRank, lora_alpha: (0, kMaxLoraAlpha], as
// train --lora-alpha), and what lmzoo's adapters do not implement.
AdapterSettings check_supported(const nlohmann::json& cfg, const std::string& path) {
  namespace lim = train_limits;
  auto fail = [&](const std::string& what) { throw HfConfigError(path + ": " + what); };
  auto refuse = [&](const std::string& what, const std::string& why = "") {
    fail(what + " is not supported" + (why.empty() ? "" : " (" + why + ")"));
  };
  if (!cfg.is_object()) fail("must hold a JSON object (PEFT's LoraConfig), got " + shown(cfg));
  // FIELD when present and not null, after checking it is of the JSON type KIND names.
  auto field = [&](const char* key, bool (nlohmann::json::*is_kind)() const noexcept,
                   const char* kind) -> const nlohmann::json* {
    if (!cfg.contains(key) || cfg.at(key).is_null()) return nullptr;
    const nlohmann::json& value = cfg.at(key);
    if (!(value.*is_kind)()) fail(std::string(key) + " must be " + kind + ", got " + shown(value));
    return &value;
  };
  const nlohmann::json* peft_type = field("peft_type", &nlohmann::json::is_string, "a string");
  if (!peft_type) fail("has no peft_type (a LoRA adapter's is \"LORA\")");
  if (*peft_type != "LORA") refuse("peft_type " + shown(*peft_type), "lmzoo imports LORA adapters");
  if (const auto* bias = field("bias", &nlohmann::json::is_string, "a string"); bias && *bias != "none") {
    refuse("bias " + shown(*bias), "lmzoo's adapters train no biases: \"none\"");
  }
  for (const char* key : {"use_dora", "modules_to_save", "rank_pattern", "alpha_pattern", "layer_replication"}) {
    if (!empty_or_null(cfg, key)) refuse(key + std::string(" ") + shown(cfg.at(key)));
  }
  AdapterSettings s;
  const std::string rank_range = "an integer between 1 and " + std::to_string(lim::kMaxLoraRank);
  const nlohmann::json* r = field("r", &nlohmann::json::is_number_integer, rank_range.c_str());
  if (!r) fail("has no r (the adapters' rank, " + rank_range + ")");
  const bool rank_in_range = r->is_number_unsigned()
                                 ? r->get<uint64_t>() >= 1 && r->get<uint64_t>() <= uint64_t(lim::kMaxLoraRank)
                                 : r->get<int64_t>() >= 1 && r->get<int64_t>() <= lim::kMaxLoraRank;
  if (!rank_in_range) {
    fail("r must be " + rank_range + ", got " + shown(*r));
  }
  s.rank = r->get<int64_t>();
  const std::string alpha_range = "in (0, " + std::to_string(int64_t(lim::kMaxLoraAlpha)) + "]";
  const nlohmann::json* alpha = field("lora_alpha", &nlohmann::json::is_number, ("a number " + alpha_range).c_str());
  if (!alpha) fail("has no lora_alpha (a number " + alpha_range + ")");
  s.alpha = alpha->get<double>();
  if (!(s.alpha > 0 && s.alpha <= lim::kMaxLoraAlpha)) fail("lora_alpha must be " + alpha_range + ", got " + shown(*alpha));
  if (const auto* rslora = field("use_rslora", &nlohmann::json::is_boolean, "true or false")) s.rslora = rslora->get<bool>();
  if (s.rslora && s.alpha * std::sqrt(double(s.rank)) > lim::kMaxLoraAlpha) {
    const double scaled = std::round(s.alpha * std::sqrt(double(s.rank)) * 100) / 100;
    fail("lora_alpha " + shown(*alpha) + " with use_rslora and r " + std::to_string(s.rank) +
         " becomes lmzoo's lora_alpha " + shown(scaled) + " (alpha * sqrt(r), for its scale alpha / r), which must be " +
         alpha_range);
  }
  if (const auto* dropout = field("lora_dropout", &nlohmann::json::is_number, "a number in [0, 1)")) {
    s.dropout = dropout->get<double>();
    if (!(s.dropout >= 0 && s.dropout < 1)) fail("lora_dropout must be in [0, 1), got " + shown(*dropout));
  }
  return s;
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
    const torch::Tensor tensor = file.tensor(key);
    try {
      check_hf_weight(key, tensor);  // floating point, every value finite: as a model's weights
    } catch (const HfFormatError& e) {
      throw HfFormatError(path + ": " + e.what());
    }
    (is_a ? out[module].A : out[module].B) = tensor.to(torch::kFloat);
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

// The targets whose HF modules PAIRS adapts, in the model's order.
std::vector<LoraTarget> adapted_targets(torch::nn::Module& model, const std::map<std::string, HfWeightRule>& rules,
                                        const std::map<std::string, AdapterPair>& pairs) {
  std::vector<LoraTarget> targets;
  for (const LoraSiteTargets& site : lora_site_targets(model)) {
    const HfWeightRule& rule = rules.at(site.linear + ".weight");
    for (size_t i = 0; i < site.parts.size(); ++i) {
      if (!pairs.count(hf_module_of(rule, i, site.parts.size()))) continue;
      if (rule.layout == HfLayout::kHeadInterleavedQkv) {
        throw HfConfigError("an adapter on " + rule.hf[0] + " (GPT-NeoX's per-head query_key_value) is not supported");
      }
      if (std::find(targets.begin(), targets.end(), site.parts[i]) == targets.end()) targets.push_back(site.parts[i]);
    }
  }
  return targets;
}

// Each lmzoo adapter from its HF module: A as it is, B's rows of the part (all of B for one module per part);
// marks the pairs used.
void copy_adapters(torch::nn::Module& model, const std::map<std::string, HfWeightRule>& rules,
                   std::map<std::string, AdapterPair>& pairs, int64_t rank) {
  torch::NoGradGuard no_grad;
  for (const LoraSite& site : lora_sites(model)) {
    const HfWeightRule& rule = rules.at(site.linear + ".weight");
    int64_t row = 0;
    for (size_t i = 0; i < site.parts.size(); ++i) {
      const LoraPart& part = site.parts[i];
      const std::string module = hf_module_of(rule, i, site.parts.size());
      const auto found = pairs.find(module);
      if (!part.adapter.is_empty() && found != pairs.end()) {
        const bool fused = rule.hf.size() != site.parts.size();
        const torch::Tensor& whole_B = found->second.B;
        const bool rows_there = !fused || (whole_B.dim() == 2 && whole_B.size(0) >= row + part.width);
        const torch::Tensor B = fused && rows_there ? whole_B.narrow(0, row, part.width) : whole_B;
        if (!rows_there || found->second.A.sizes() != part.adapter->lora_A.sizes() ||
            B.sizes() != part.adapter->lora_B.sizes()) {
          throw HfFormatError("adapter_model.safetensors: " + module + "'s lora_A/lora_B shapes do not fit rank " +
                              std::to_string(rank) + " on the base's " + site.linear);
        }
        part.adapter->lora_A.copy_(found->second.A);
        part.adapter->lora_B.copy_(B);
        found->second.used = true;
      }
      row += part.width;
    }
  }
}

}  // namespace

PeftImportResult import_peft_adapter(const std::string& adapter_dir, const std::string& base, const std::string& out_dir) {
  const nlohmann::json cfg = read_adapter_config(adapter_dir);
  const AdapterSettings settings = check_supported(cfg, adapter_config_path(adapter_dir));
  std::map<std::string, AdapterPair> pairs = read_adapter_tensors(adapter_dir);
  std::error_code ec;
  if (fs::exists(out_dir, ec)) throw std::invalid_argument("--out " + out_dir + " exists; name a new directory");
  const CheckpointInfo base_info = read_checkpoint(base);
  if (is_lora_run(base_info.train)) {
    throw std::invalid_argument("the base " + base_info.dir + " is itself a LoRA run: merge it first (lmzoo merge-lora)");
  }
  PeftImportResult result;
  result.architecture = hf_architecture_of(base_info.model);
  result.rank = settings.rank;
  result.alpha = settings.alpha;
  if (settings.rslora) result.alpha *= std::sqrt(double(result.rank));  // alpha/sqrt(r) = alpha'/r
  std::map<std::string, HfWeightRule> rules;
  for (auto& rule : hf_weight_rules(result.architecture, base_info.model)) rules[rule.lmzoo] = rule;

  AnyModel model = build_model(base_info.model);
  const std::vector<LoraTarget> targets = adapted_targets(*model.module(), rules, pairs);
  TrainConfig train;
  train.objective = default_objective(base_info.model.arch, /*pairs_data=*/false);
  train.lora_rank = result.rank;
  train.lora_alpha = result.alpha;
  train.lora_dropout = settings.dropout;
  train.lora_targets.clear();
  for (LoraTarget t : targets) train.lora_targets += (train.lora_targets.empty() ? "" : ",") + enum_name(t);
  if (targets.empty()) throw HfFormatError("adapter_model.safetensors adapts no projection of this " +
                                           enum_name(result.architecture));
  try {
    train.validate();  // the checks above keep every field in range; this names the file should one slip through
    attach_lora(*model.module(), lora_settings(train));
  } catch (const std::invalid_argument& e) {  // e.g. "--lora-rank 64 exceeds the smaller side (32) of ...": the file's r
    std::string what = e.what();
    if (what.rfind("--lora-rank ", 0) == 0) what.replace(0, 12, "r ");
    throw HfConfigError(adapter_config_path(adapter_dir) + ": " + what);
  }
  freeze_all_but_trainable(model, train);

  copy_adapters(*model.module(), rules, pairs, result.rank);
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
  info.chat = base_info.chat;
  save_checkpoint(out_dir, model.module(), /*optimizer=*/nullptr, info);
  return result;
}

}  // namespace lmzoo
