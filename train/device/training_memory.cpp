// TrainConfig -> TrainingPlan (LoRA targets, --trainable names, base precision, checkpointing) and the estimate of
// a run on its device, with the report lmzoo train --dry-run prints.
#include "train/device/training_memory.h"

#include <cstdio>
#include <stdexcept>

#include "models/activation_checkpointing.h"
#include "models/kernels/cpu_features.h"
#include "models/kernels/fused_head_loss.h"
#include "train/peft/lora_setup.h"

namespace lmzoo {

TrainingPlan training_plan(const TrainConfig& cfg) {
  TrainingPlan plan;
  plan.lora = lora_settings(cfg);
  if (plan.lora.enabled()) {
    plan.trainable = trainable_name_parts(cfg);
    plan.base_element_bytes = cfg.base_precision == BasePrecision::kInt8   ? 1
                              : cfg.base_precision == BasePrecision::kBf16 ? 2
                                                                           : 4;
  }
  plan.checkpoint_every = parse_checkpoint_policy(cfg.activation_checkpointing).every;
  return plan;
}

MemoryEstimate estimate_training_run(const ModelConfig& model, const TrainConfig& cfg, const torch::Device& device) {
  Workload w = training_workload(model, cfg.batch_size);
  w.fused_cpu_kernels = device.is_cpu() && kernels::avx2_enabled();
  w.plan = training_plan(cfg);
  if (cfg.fused_loss) w.plan.fused_loss_chunk_rows = fused_head_loss_chunk_rows(model.vocab_size, device.is_cuda());
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
                         (plan.low_precision_base() ? ", frozen projections " + enum_name(cfg.base_precision)
                                                    : ", fp32") +
                         ")"));
  out.push_back(line("gradients", e.gradients,
                     "(fp32, those of the " + std::to_string(e.trainable) + " trainable parameters live at the peak)"));
  out.push_back(line("optimizer", e.optimizer, "(AdamW exp_avg and exp_avg_sq of the trainable parameters)"));
  out.push_back(line("activations", e.activations,
                     "(batch " + std::to_string(cfg.batch_size) + " x " + std::to_string(model.max_seq_len) +
                         " tokens; " + std::to_string(kept_inputs) + " of " + std::to_string(layers) +
                         " blocks checkpointed" + (lora ? "; adapters' inputs and middles" : "") + ")"));
  if (e.runtime > 0) out.push_back(line("runtime", e.runtime, "(LibTorch and the process, measured)"));
  if (e.loading > e.running()) {
    out.push_back(line("loading", e.loading,
                       "(the peak: every parameter in fp32 while the model is built or read, before its frozen "
                       "projections are lowered to " +
                           enum_name(cfg.base_precision) + ")"));
  }
  out.push_back(line("total", e.total(), "(predicted peak " + std::string(device.is_cpu() ? "resident memory" : "GPU memory allocated") + " on " + device.str() + ")"));
  return out;
}

}  // namespace lmzoo
