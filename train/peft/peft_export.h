// A LoRA run's adapters as Hugging Face PEFT files: adapter_config.json and adapter_model.safetensors with the names
// and scaling peft's PeftModel.from_pretrained loads onto the model that lmzoo export --format hf writes of the
// base. Leaves out: the merged model (train/peft/lora_merge.h).
#pragma once
#include <string>
#include <vector>

#include "models/hf_config.h"
#include "train/checkpoint/checkpoint.h"

namespace lmzoo {

struct PeftExportResult {
  HfArchitecture architecture;
  std::vector<std::string> files;  // written into the output directory
};

// Writes the adapters of the LoRA checkpoint CHECKPOINT to OUT_DIR (made if missing). Each adapter becomes
// base_model.model.<HF module>.lora_A.weight (r, in) and .lora_B.weight (out, r). Where HF keeps one module for
// several lmzoo adapters (GPT-2's c_attn = [q; k; v]) they are stacked block-diagonally, and every adapter is then
// padded with zero rank so the file has one rank R and lora_alpha = alpha R / r: the same alpha / r scale, the
// same B A. Throws std::invalid_argument when the run trains tensors PEFT files do not carry here (--trainable, a
// classifier head) or a layout PEFT cannot express (GPT-NeoX's per-head query_key_value).
PeftExportResult export_peft_adapter(const CheckpointInfo& checkpoint, const std::string& out_dir);

}  // namespace lmzoo
