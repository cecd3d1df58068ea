// TrainConfig -> TrainingPlan (LoRA targets, --trainable names, base precision, checkpointing) and the estimate of
// a run on its device, with the report lmzoo train --dry-run prints.
#include "train/training_memory.h"

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "models/kernels/cpu_features.h"

namespace lmzoo {

namespace {

// "a,b,,c" -> {"a", "b", "c"}, spaces around names dropped.
std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t begin = item.find_first_not_of(' '), end = item.find_last_not_of(' ');
    if (begin != std::string::npos) out.push_back(item.substr(begin, end - begin + 1));
  }
  return out;
}

// "q,v" or "all-linear" -> the LoRA targets (models/lora.h's table).
std::vector<LoraTarget> lora_target_list(const std::string& text) {
  std::vector<LoraTarget> out;
  if (text == "all-linear") {
    for (const auto& entry : EnumTable<LoraTarget>::entries) out.push_back(entry.value);
    return out;
  }
  for (const std::string& name : comma_list(text)) {
    const auto target = find_enum<LoraTarget>(name);
    if (!target) throw std::invalid_argument("LoRA target '" + name + "' is not one of " + enum_choices<LoraTarget>() + " or all-linear");
    out.push_back(*target);
  }
  return out;
}

}  // namespace

int64_t checkpoint_interval(const std::string& setting) {
  if (setting == "none") return 0;
  if (setting == "blocks") return 1;
  const std::string prefix = "every-";
  if (setting.rfind(prefix, 0) == 0 && setting.size() > prefix.size() &&
      setting.find_first_not_of("0123456789", prefix.size()) == std::string::npos && setting.size() - prefix.size() < 10) {
    const int64_t n = std::stoll(setting.substr(prefix.size()));
    if (n >= 1) return n;
  }
  throw std::invalid_argument("activation checkpointing '" + setting + "' is not one of none, blocks, every-N (N >= 1)");
}

TrainingPlan training_plan(const TrainConfig& cfg) {
  TrainingPlan plan;
  plan.lora.rank = cfg.lora_rank;
  plan.lora.alpha = cfg.lora_alpha;
  plan.lora.dropout = cfg.lora_dropout;
  if (plan.lora.enabled()) {
    plan.lora.targets = lora_target_list(cfg.lora_targets);
    plan.trainable = comma_list(cfg.trainable);
    plan.bf16_base = cfg.base_precision == BasePrecision::kBf16;
  }
  plan.checkpoint_every = checkpoint_interval(cfg.activation_checkpointing);
  return plan;
}

MemoryEstimate estimate_training_run(const ModelConfig& model, const TrainConfig& cfg, const torch::Device& device) {
  Workload w = training_workload(model, cfg.batch_size);
  w.fused_cpu_kernels = device.is_cpu() && kernels::avx2_enabled();
  w.plan = training_plan(cfg);
  const MemoryEstimate e = estimate_memory(model, w);
  return device.is_cpu() ? with_host_runtime(e) : e;
}

std::vector<std::string> memory_report_lines(const MemoryEstimate& e, const ModelConfig& model, const TrainConfig& cfg,
                                             const torch::Device& device) {
  const TrainingPlan plan = training_plan(cfg);
  const bool lora = plan.lora.enabled();
  auto line = [](const std::string& name, double bytes, const std::string& detail) {
    char text[256];
    std::snprintf(text, sizeof text, "%-12s %10s  %s", name.c_str(), format_bytes(bytes).c_str(), detail.c_str());
    return std::string(text);
  };
  const int64_t layers = model.arch == Arch::kT5 ? model.n_layer + model.decoder_layers() : model.n_layer;
  const int64_t kept_inputs = model.arch == Arch::kT5 ? checkpointed_blocks(model.n_layer, plan.checkpoint_every) +
                                                           checkpointed_blocks(model.decoder_layers(), plan.checkpoint_every)
                                                     : checkpointed_blocks(model.n_layer, plan.checkpoint_every);
  std::vector<std::string> out;
  out.push_back(line("weights", e.weights,
                     "(" + std::to_string(e.parameters) + " parameters" +
                         (lora ? " + LoRA rank " + std::to_string(plan.lora.rank) + " adapters" : "") +
                         (plan.bf16_base ? ", frozen projections bf16" : ", fp32") + ")"));
  out.push_back(line("gradients", e.gradients, "(" + std::to_string(e.trainable) + " trainable parameters, fp32)"));
  out.push_back(line("optimizer", e.optimizer, "(AdamW exp_avg and exp_avg_sq of the trainable parameters)"));
  out.push_back(line("activations", e.activations,
                     "(batch " + std::to_string(cfg.batch_size) + " x " + std::to_string(model.max_seq_len) +
                         " tokens; " + std::to_string(kept_inputs) + " of " + std::to_string(layers) +
                         " blocks checkpointed" + (lora ? "; adapters' inputs and middles" : "") + ")"));
  if (e.runtime > 0) out.push_back(line("runtime", e.runtime, "(LibTorch and the process, measured)"));
  out.push_back(line("total", e.total(), "(predicted peak " + std::string(device.is_cpu() ? "resident memory" : "GPU memory allocated") + " on " + device.str() + ")"));
  return out;
}

}  // namespace lmzoo
