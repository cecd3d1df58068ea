// PEFT export: lmzoo adapters mapped onto the HF modules of hf_weight_rules, stacked where HF fuses projections.
#include "train/peft/peft_export.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "base/durable_io.h"
#include "data/safetensors.h"
#include "models/hf_weights.h"
#include "models/lora.h"
#include "train/peft/lora_setup.h"

namespace lmzoo {

namespace {

// One HF module's adapter as PEFT stores it.
struct PeftModule {
  std::string name;  // HF module name, e.g. "model.layers.0.self_attn.q_proj"
  torch::Tensor A;   // (rank, in)
  torch::Tensor B;   // (out, rank)
};

std::string without_weight_suffix(const std::string& name) {
  const std::string suffix = ".weight";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0
             ? name.substr(0, name.size() - suffix.size())
             : name;
}

// The parts' adapters stacked: A = [A_1; ...; A_k] (k r, in), B with B_i in part i's rows and its r columns.
PeftModule stacked(const std::string& name, const LoraSite& site, int64_t rank) {
  std::vector<torch::Tensor> As;
  int64_t rows = 0;
  for (const auto& part : site.parts) rows += part.width;
  int64_t adapted = 0;
  for (const auto& part : site.parts) adapted += part.adapter.is_empty() ? 0 : 1;
  auto B = torch::zeros({rows, adapted * rank});  // (out, k r)
  int64_t row = 0, column = 0;
  for (const auto& part : site.parts) {
    if (!part.adapter.is_empty()) {
      As.push_back(part.adapter->lora_A.detach().to(torch::kFloat));
      B.narrow(0, row, part.width).narrow(1, column, rank).copy_(part.adapter->lora_B.detach());
      column += rank;
    }
    row += part.width;
  }
  return {name, torch::cat(As, 0), B};
}

// The HF modules of one lmzoo projection's adapters.
std::vector<PeftModule> peft_modules_of(const LoraSite& site, const HfWeightRule& rule, int64_t rank) {
  std::vector<PeftModule> out;
  if (rule.hf.size() == site.parts.size()) {  // one HF module per part (q_proj, k_proj, v_proj; or one linear)
    for (size_t i = 0; i < site.parts.size(); ++i) {
      const auto& adapter = site.parts[i].adapter;
      if (adapter.is_empty()) continue;
      out.push_back({without_weight_suffix(rule.hf[i]), adapter->lora_A.detach().to(torch::kFloat),
                     adapter->lora_B.detach().to(torch::kFloat)});
    }
    return out;
  }
  if (rule.hf.size() == 1 && rule.layout != HfLayout::kHeadInterleavedQkv) {
    out.push_back(stacked(without_weight_suffix(rule.hf[0]), site, rank));
    return out;
  }
  throw std::invalid_argument("PEFT cannot hold adapters on part of " + rule.hf[0] +
                              " (its rows interleave the heads' q, k and v): train with --lora-targets o,up,down, or "
                              "export with --merge-lora");
}

// The rank padded with zeros: A (R, in), B (out, R), B A unchanged.
PeftModule padded_to(PeftModule m, int64_t R) {
  const int64_t r = m.A.size(0);
  if (r == R) return m;
  m.A = torch::cat({m.A, torch::zeros({R - r, m.A.size(1)})}, 0);  // (R, in)
  m.B = torch::cat({m.B, torch::zeros({m.B.size(0), R - r})}, 1);  // (out, R)
  return m;
}

std::string peft_task_type(const ModelConfig& config) {
  if (config.arch == Arch::kGpt) return "CAUSAL_LM";
  if (config.arch == Arch::kT5) return "SEQ_2_SEQ_LM";
  return "FEATURE_EXTRACTION";  // peft has no masked-LM task type; this one wraps any model as it is
}

void refuse_other_trainable_tensors(const CheckpointInfo& checkpoint) {
  if (!checkpoint.train.trainable.empty()) {
    throw std::invalid_argument("--format peft writes adapters only, and this run also trained --trainable " +
                                checkpoint.train.trainable + ": export with --merge-lora");
  }
  if (!checkpoint.model.labels.empty()) {
    throw std::invalid_argument("--format peft writes adapters only, and this classifier also trained its head: " +
                                std::string("export with --merge-lora"));
  }
}

}  // namespace

PeftExportResult export_peft_adapter(const CheckpointInfo& checkpoint, const std::string& out_dir) {
  if (!is_lora_run(checkpoint.train)) throw std::invalid_argument("checkpoint " + checkpoint.dir + " has no adapters");
  refuse_other_trainable_tensors(checkpoint);
  PeftExportResult result;
  result.architecture = hf_architecture_of(checkpoint.model);
  std::map<std::string, HfWeightRule> rules;
  for (auto& rule : hf_weight_rules(result.architecture, checkpoint.model)) rules[rule.lmzoo] = rule;
  AnyModel model = load_model(checkpoint, torch::Device(torch::kCPU));
  const int64_t r = checkpoint.train.lora_rank;
  std::vector<PeftModule> modules;
  bool conv1d = false;
  for (const LoraSite& site : lora_sites(*model.module())) {
    const auto rule = rules.find(site.linear + ".weight");
    if (rule == rules.end()) throw std::logic_error("no HF tensor holds " + site.linear + ".weight");
    conv1d = conv1d || rule->second.layout == HfLayout::kConv1D;
    for (auto& m : peft_modules_of(site, rule->second, r)) modules.push_back(std::move(m));
  }
  int64_t R = r;
  for (const auto& m : modules) R = std::max<int64_t>(R, m.A.size(0));
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  nlohmann::json targets = nlohmann::json::array();
  for (auto& m : modules) {
    m = padded_to(std::move(m), R);
    tensors.emplace_back("base_model.model." + m.name + ".lora_A.weight", m.A.contiguous());
    tensors.emplace_back("base_model.model." + m.name + ".lora_B.weight", m.B.contiguous());
    targets.push_back(m.name);
  }
  const nlohmann::json config = {
      {"peft_type", "LORA"},
      {"task_type", peft_task_type(checkpoint.model)},
      {"base_model_name_or_path", checkpoint.train.init_checkpoint},
      {"r", R},
      {"lora_alpha", checkpoint.train.lora_alpha * double(R) / double(r)},  // scale alpha / r as trained
      {"lora_dropout", checkpoint.train.lora_dropout},
      {"target_modules", targets},
      {"bias", "none"},
      {"fan_in_fan_out", conv1d},
      {"inference_mode", true},
      {"init_lora_weights", true},
      {"use_rslora", false},
      {"modules_to_save", nullptr},
      {"rank_pattern", nlohmann::json::object()},
      {"alpha_pattern", nlohmann::json::object()}};
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw std::runtime_error("cannot create " + out_dir + ": " + ec.message());
  write_safetensors((std::filesystem::path(out_dir) / "adapter_model.safetensors").string(), tensors,
                    {{"format", "pt"}});
  write_file_durably((std::filesystem::path(out_dir) / "adapter_config.json").string(), config.dump(2) + "\n");
  result.files = {"adapter_config.json", "adapter_model.safetensors"};
  return result;
}

}  // namespace lmzoo
